package expr

import (
	"fmt"
	"strings"
)

// Syntax is the summary of the expression language for the help of the tools that take
// expressions (select, filter, expect) and their docs; Help appends the function list.
const Syntax = `Expressions are Spark SQL's (selectExpr, filter), evaluated with Spark 4's ANSI rules:
  columns        name, value.user.id (dot paths into structs), ` + "`odd name`" + ` (backquotes)
  literals       1 (int), 1L (bigint), 1.5 (decimal), 1.5D, 1e3 (double), 1.5BD, 'text',
                 DATE '2024-05-01', TIMESTAMP '2024-05-01 12:00:00', INTERVAL '5' MINUTE,
                 TRUE, FALSE, NULL
  arithmetic     + - * / % div, unary -, || (concat)
  comparison     = == <> != < <= > >= <=>, IS [NOT] DISTINCT FROM
  logic          AND, OR, NOT (three-valued: NULL AND FALSE is FALSE)
  predicates     IS [NOT] NULL, [NOT] IN (…), [NOT] BETWEEN … AND …,
                 [NOT] LIKE … [ESCAPE 'c'], RLIKE / REGEXP (RE2 syntax)
  conditionals   CASE WHEN … THEN … [ELSE …] END, CASE x WHEN … END, IF, COALESCE, NULLIF
  casts          CAST(x AS type), TRY_CAST(x AS type); types boolean, int, bigint,
                 decimal(p,s), double, string, date, timestamp
ANSI mode: integer overflow, division by zero and a cast of a value that does not fit or
parse are errors; the try_ functions and TRY_CAST return NULL instead. The session time zone
is UTC.`

// Help is Syntax followed by every registered function (Functions), one per line with its
// signature and what it does: the list is generated, so it stays current.
func Help() string {
	var b strings.Builder
	b.WriteString(Syntax)
	b.WriteString("\n\nFunctions:\n")
	for _, f := range Functions() {
		fmt.Fprintf(&b, "  %s\n      %s\n", f.Sig, f.Doc)
	}
	return strings.TrimRight(b.String(), "\n")
}
