// Package expr is the expression language of the select, filter and expect tools: Spark SQL's
// expression syntax, parsed, type-checked against an Arrow schema with Spark 4's ANSI
// coercion, and evaluated vectorized over whole Arrow record batches (issue #21).
//
// Each failure surfaces at its own moment:
//
//   - Parse / ParseSelect: a *SyntaxError shows the expression with a caret under the
//     offending token and says what was expected there.
//   - Compile / CompilePredicate / CompileSelect: a *TypeError, before any row is read, names
//     the column, its type and the function or operator (unknown columns and functions get a
//     "did you mean" on the same line).
//   - Program.Eval: a *RuntimeError with Spark's error class (DIVIDE_BY_ZERO,
//     REMAINDER_BY_ZERO, ARITHMETIC_OVERFLOW, CAST_INVALID_INPUT, CAST_OVERFLOW,
//     NUMERIC_VALUE_OUT_OF_RANGE, CANNOT_PARSE_TIMESTAMP) naming the first failing row through
//     the caller's RowPos ("file:line", "topic/partition@offset", codec/rowpos).
//
// # Language
//
// Column references with dot paths into structs and `backquoted` names (resolved
// case-insensitively when there is no exact match); literals typed as Spark types them (1 int,
// 1L bigint, 1.5 decimal(2,1), 1.5D and 1e3 double, 1.5BD decimal, 'str', DATE '…',
// TIMESTAMP '…', INTERVAL '5' MINUTE, TRUE/FALSE/NULL); + - * / % div and unary minus;
// = == <> != < <= > >= <=> and IS [NOT] DISTINCT FROM; AND/OR/NOT with three-valued logic;
// IS [NOT] NULL, [NOT] IN (…), [NOT] BETWEEN, [NOT] LIKE … [ESCAPE 'c'], RLIKE/REGEXP;
// CASE WHEN (both forms); CAST/TRY_CAST; || (concat); function calls (Functions lists them).
// Precedence is Spark's: unary minus, then * / % div, then + - ||, then comparisons, then
// the IS/IN/BETWEEN/LIKE predicates, NOT, AND, OR.
//
// Types: boolean, int, bigint, decimal(p,s), double, string, date, timestamp (µs, UTC: the
// session time zone is fixed to UTC), and day-time interval literals. tinyint/smallint and
// float columns are read as int and double; other Arrow timestamp units are converted to µs.
//
// # Semantics (Spark 4, ANSI mode)
//
//   - Integer overflow, division or remainder by zero (also of doubles), and a cast of a value
//     that does not fit or does not parse are errors; try_add, try_subtract, try_multiply,
//     try_divide, try_mod and TRY_CAST return NULL instead. As in Spark, only the try_
//     operation itself is tolerant: an error inside its arguments still fails.
//   - Errors count only for rows that are evaluated in Spark: a CASE/IF/COALESCE branch only
//     for the rows that take it, the right side of AND/OR only where the left side does not
//     decide, the right operand of arithmetic only where the left one is not NULL.
//   - Coercion: int < bigint < decimal < double; integral literals next to a decimal take
//     their own precision (DecimalType.fromLiteral); decimal + - * / % follow Spark's
//     precision/scale rules with allowPrecisionLoss (results rounded HALF_UP, an overflow of
//     38 digits is NUMERIC_VALUE_OUT_OF_RANGE); / over integral or double operands is double
//     division; a string compared with or added to an integral value is cast to bigint, with a
//     double or decimal to double, with a date or timestamp to that type (a bad string is
//     CAST_INVALID_INPUT, as in Spark 4).
//   - Doubles compare as in Spark: NaN = NaN, NaN above every other value.
//
// # Evaluation
//
// Vectorized over whole arrays: Arrow compute kernels for comparisons (other than doubles),
// Kleene AND/OR, NOT, IS NULL, double + - *, widening casts and FilterArray per column; hand
// loops over the Arrow buffers for integral and decimal arithmetic (checked, so that the
// failing row is known), double comparisons, LIKE, string, date and cast functions. No
// per-row interpretation of the tree: every node runs once per batch.
//
// # Where DuckDB differs from Spark
//
// The differential test (diff_test.go) evaluates generated expressions here and in DuckDB,
// translating the syntax where it differs; where DuckDB's semantics differ it takes pyspark as
// the reference instead (one local session for all of them):
//
//	Spark (this package)                       DuckDB                          test reference
//	x / 0, x % 0, x div 0: error               NULL                            DuckDB with CASE … error()
//	CAST(1.5D AS INT) = 1 (truncates)          2 (rounds)                      DuckDB with trunc()
//	year(), length() … return int              bigint                          DuckDB with CAST AS INTEGER
//	x div y                                    x // y                          DuckDB (translated)
//	x RLIKE p                                  regexp_matches(x, p)            DuckDB (translated)
//	x <=> y                                    x IS NOT DISTINCT FROM y        DuckDB (translated)
//	1L, 1.5D literals                          CAST(1 AS BIGINT), CAST(… AS DOUBLE) DuckDB (translated)
//	CAST(double AS STRING): 1.0E10 (Java)      10000000000.0                   Spark
//	CAST(timestamp AS STRING)                  with a +00 zone suffix          Spark
//	CAST(string AS INT): trims, rejects '1.5'  other trimming and rounding     Spark
//	concat(str, int): implicit cast            no implicit cast                Spark
//	substring(s, pos ≤ 0 …)                    other start rule                Spark
//	ceil/floor(double): bigint (NaN → 0)       double                          Spark
//	decimal / decimal: decimal, HALF_UP        double                          Spark
//	decimal * decimal: up to 38 digits         overflows past 18 digits        Spark
//	'12' = 12: string cast to bigint           string comparison / cast rules  Spark
//	to_date(string): ANSI error if malformed   other formats accepted          Spark
//	try_add & co.                              no such functions               Spark
//
// Known differences from Spark that remain: RLIKE uses Go's RE2 syntax, not Java regular
// expressions (no backreferences or lookaround); to_date/to_timestamp formats support the
// pattern letters y M d H m s S only; date_trunc needs a constant unit; round needs a
// constant, non-negative scale; div over decimals is not supported yet. Spark's optimizer
// merges a nested + or * into an enclosing try_add/try_multiply (ReorderAssociativeOperator),
// which then also tolerates the inner overflow; here the inner operation still fails.
package expr
