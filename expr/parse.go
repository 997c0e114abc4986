package expr

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Node is a parsed, not yet type-checked expression. Pos is the byte offset in the source
// text that error messages put the caret under.
type Node interface{ Pos() int }

// Ident is a column reference: one or more dot-separated names, each bare or backquoted
// (`a b`.c), as Spark resolves them (first part a column, the rest struct fields).
type Ident struct {
	Path []string
	At   int
}

// LitKind is the lexical kind of a literal.
type LitKind int

// The literal kinds of Spark SQL's grammar.
const (
	LitNull LitKind = iota
	LitBool
	LitNumber // digits with optional fraction, exponent and a type suffix (L, D, BD, ...)
	LitString
	LitDate      // DATE '…'
	LitTimestamp // TIMESTAMP '…'
	LitInterval  // INTERVAL '…' unit (Unit: WEEK … MICROSECOND, YEAR, MONTH or YEAR TO MONTH)
	LitBinary    // X'…': hex digits, as written
)

// Lit is a literal as written; Text holds the number, the unquoted string, or the interval's
// quantity, Unit the interval unit (upper case).
type Lit struct {
	Kind LitKind
	Text string
	Unit string
	At   int
}

// Unary is -x, +x, NOT x.
type Unary struct {
	Op string // "-", "+", "NOT"
	X  Node
	At int
}

// Binary is an arithmetic, comparison, concatenation or boolean operator. Op is upper case
// for keywords (AND, OR, DIV) and the symbol otherwise ("=" also for "==", "!=" for "<>").
type Binary struct {
	Op   string
	L, R Node
	At   int
}

// IsNull is x IS [NOT] NULL.
type IsNull struct {
	X   Node
	Not bool
	At  int
}

// In is x [NOT] IN (list…).
type In struct {
	X    Node
	List []Node
	Not  bool
	At   int
}

// Between is x [NOT] BETWEEN lo AND hi.
type Between struct {
	X, Lo, Hi Node
	Not       bool
	At        int
}

// Like is x [NOT] LIKE pattern [ESCAPE 'c'], or x [NOT] RLIKE regex when Regex is set.
type Like struct {
	X, Pattern Node
	Escape     rune // 0: the default escape, backslash
	Not        bool
	Regex      bool
	At         int
}

// When is one WHEN … THEN … arm of a CASE.
type When struct{ Cond, Then Node }

// Case is CASE [operand] WHEN … THEN … [ELSE …] END. Else is nil when absent (NULL).
type Case struct {
	Operand Node
	Whens   []When
	Else    Node
	At      int
}

// Cast is CAST(x AS type) or TRY_CAST(x AS type).
type Cast struct {
	X   Node
	To  Type
	Try bool
	At  int
}

// Call is a function call name(args…); Name is lower case.
type Call struct {
	Name string
	Args []Node
	At   int
}

// FieldAccess is x.name on a struct-valued expression other than a column path (a column's
// dot path is an Ident).
type FieldAccess struct {
	X    Node
	Name string
	At   int
}

// Index is x[i]: an array element (0-based) or a map value by key.
type Index struct {
	X, I Node
	At   int
}

// Pos returns where the node starts in the source text.
func (n *Ident) Pos() int       { return n.At }
func (n *Lit) Pos() int         { return n.At }
func (n *Unary) Pos() int       { return n.At }
func (n *Binary) Pos() int      { return n.At }
func (n *IsNull) Pos() int      { return n.At }
func (n *In) Pos() int          { return n.At }
func (n *Between) Pos() int     { return n.At }
func (n *Like) Pos() int        { return n.At }
func (n *Case) Pos() int        { return n.At }
func (n *Cast) Pos() int        { return n.At }
func (n *Call) Pos() int        { return n.At }
func (n *FieldAccess) Pos() int { return n.At }
func (n *Index) Pos() int       { return n.At }

// SelectItem is one entry of a select list: an expression with an optional alias, or a star
// (`*`, `value.*`) with an optional EXCEPT list.
type SelectItem struct {
	Expr     Node
	Alias    string
	Star     bool
	StarPath []string   // value.* → ["value"]; empty for *
	Except   [][]string // * EXCEPT (a, b.c)
	Text     string     // the item's source text, the default output name of an expression
	At       int
}

// SyntaxError is a parse error: the source text, the byte offset of the offending token and
// what the parser expected there. Error() prints the text with a caret under the position.
type SyntaxError struct {
	Src      string
	At       int
	Found    string
	Expected string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("syntax error at position %d: expected %s, found %s\n%s", e.At+1, e.Expected, e.Found, caret(e.Src, e.At))
}

// caret renders the source on one line and a ^ under byte offset at (columns counted in runes).
func caret(src string, at int) string {
	if at > len(src) {
		at = len(src)
	}
	line := strings.ReplaceAll(strings.ReplaceAll(src, "\n", " "), "\t", " ")
	return "  " + line + "\n  " + strings.Repeat(" ", len([]rune(src[:at]))) + "^"
}

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tQuoted // backquoted identifier
	tNumber
	tString
	tOp
)

type token struct {
	kind tokKind
	text string // identifiers keep their case; keywords are compared upper-cased
	at   int
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of expression"
	case tString:
		return "'" + t.text + "'"
	case tQuoted:
		return "`" + t.text + "`"
	}
	return "'" + t.text + "'"
}

func lex(src string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '-' && i+1 < len(src) && src[i+1] == '-': // comment to end of line
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.') {
				j++
			}
			if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
				k := j + 1
				if k < len(src) && (src[k] == '+' || src[k] == '-') {
					k++
				}
				if k < len(src) && src[k] >= '0' && src[k] <= '9' {
					j = k
					for j < len(src) && src[j] >= '0' && src[j] <= '9' {
						j++
					}
				}
			}
			// type suffix: L S Y D F BD
			if j+1 < len(src) && strings.EqualFold(src[j:j+2], "BD") && (j+2 == len(src) || !isIdentChar(rune(src[j+2]))) {
				j += 2
			} else if j < len(src) && strings.ContainsRune("LlSsYyDdFf", rune(src[j])) && (j+1 == len(src) || !isIdentChar(rune(src[j+1]))) {
				j++
			}
			if j < len(src) && isIdentChar(rune(src[j])) {
				return nil, &SyntaxError{Src: src, At: j, Found: "'" + string(src[j]) + "'", Expected: "a number"}
			}
			toks = append(toks, token{tNumber, src[i:j], i})
			i = j
		case c == '\'' || c == '"':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(src) {
					return nil, &SyntaxError{Src: src, At: i, Found: "an unterminated string", Expected: "a closing " + string(c)}
				}
				if src[j] == c {
					if j+1 < len(src) && src[j+1] == c { // '' inside '…'
						b.WriteByte(c)
						j += 2
						continue
					}
					break
				}
				if src[j] == '\\' && j+1 < len(src) {
					j += unescapeSQL(&b, src[j:])
					continue
				}
				b.WriteByte(src[j])
				j++
			}
			toks = append(toks, token{tString, b.String(), i})
			i = j + 1
		case c == '`':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(src) {
					return nil, &SyntaxError{Src: src, At: i, Found: "an unterminated `name`", Expected: "a closing `"}
				}
				if src[j] == '`' {
					if j+1 < len(src) && src[j+1] == '`' {
						b.WriteByte('`')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(src[j])
				j++
			}
			toks = append(toks, token{tQuoted, b.String(), i})
			i = j + 1
		case isIdentStart(rune(c)) || c >= 0x80:
			j := i
			for j < len(src) && (isIdentChar(rune(src[j])) || src[j] >= 0x80) {
				j++
			}
			toks = append(toks, token{tIdent, src[i:j], i})
			i = j
		default:
			op := ""
			for _, o := range []string{"<=>", "<=", ">=", "<>", "!=", "==", "||", "=", "<", ">", "+", "-", "*", "/", "%", "(", ")", ",", ".", "!", "[", "]"} {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, &SyntaxError{Src: src, At: i, Found: "'" + string(c) + "'", Expected: "an operator, a name or a literal"}
			}
			toks = append(toks, token{tOp, op, i})
			i += len(op)
		}
	}
	toks = append(toks, token{tEOF, "", len(src)})
	return toks, nil
}

func isIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }
func isIdentChar(r rune) bool  { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// reserved words that cannot start an expression as a bare column name.
var reserved = map[string]bool{"AND": true, "OR": true, "NOT": true, "IS": true, "IN": true, "BETWEEN": true,
	"LIKE": true, "RLIKE": true, "REGEXP": true, "CASE": true, "WHEN": true, "THEN": true, "ELSE": true, "END": true,
	"AS": true, "DIV": true, "ESCAPE": true, "EXCEPT": true, "FROM": true, "DISTINCT": true}

type parser struct {
	src  string
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekAt(k int) token {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) next() token { t := p.toks[p.i]; p.i++; return t }

func (p *parser) isKw(kw string) bool {
	t := p.peek()
	return t.kind == tIdent && strings.EqualFold(t.text, kw)
}
func (p *parser) isOp(op string) bool { t := p.peek(); return t.kind == tOp && t.text == op }

func (p *parser) acceptKw(kw string) bool {
	if p.isKw(kw) {
		p.i++
		return true
	}
	return false
}
func (p *parser) acceptOp(op string) bool {
	if p.isOp(op) {
		p.i++
		return true
	}
	return false
}

func (p *parser) fail(expected string) error {
	t := p.peek()
	return &SyntaxError{Src: p.src, At: t.at, Found: t.String(), Expected: expected}
}

func (p *parser) expectOp(op string) error {
	if !p.acceptOp(op) {
		return p.fail("'" + op + "'")
	}
	return nil
}
func (p *parser) expectKw(kw string) error {
	if !p.acceptKw(kw) {
		return p.fail(kw)
	}
	return nil
}

// Parse parses one Spark SQL expression (a predicate or a value).
func Parse(src string) (Node, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	if p.peek().kind == tEOF {
		return nil, p.fail("an expression")
	}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.peek().kind != tEOF {
		return nil, p.fail("an operator or the end of the expression")
	}
	return n, nil
}

// ParseSelect parses a select list: comma-separated items, each `*`, `* EXCEPT (a, b)`,
// `path.*` or `expr [[AS] name]`, as in Spark's selectExpr.
func ParseSelect(src string) ([]SelectItem, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	var items []SelectItem
	for {
		it, err := p.selectItem()
		if err != nil {
			return nil, err
		}
		items = append(items, it)
		if p.acceptOp(",") {
			continue
		}
		if p.peek().kind != tEOF {
			return nil, p.fail("',' or the end of the select list")
		}
		return items, nil
	}
}

func (p *parser) selectItem() (SelectItem, error) {
	start := p.peek().at
	it := SelectItem{At: start}
	// star forms: *, a.b.*
	j := 0
	var path []string
	for {
		t := p.peekAt(j)
		if t.kind == tOp && t.text == "*" {
			break
		}
		if (t.kind == tIdent || t.kind == tQuoted) && p.peekAt(j+1).kind == tOp && p.peekAt(j+1).text == "." {
			path = append(path, t.text)
			j += 2
			continue
		}
		path = nil
		j = -1
		break
	}
	if j >= 0 {
		p.i += j + 1
		it.Star, it.StarPath = true, path
		if p.acceptKw("EXCEPT") {
			if err := p.expectOp("("); err != nil {
				return it, err
			}
			for {
				n, err := p.primary()
				if err != nil {
					return it, err
				}
				id, ok := n.(*Ident)
				if !ok {
					return it, &SyntaxError{Src: p.src, At: n.Pos(), Found: "an expression", Expected: "a column name"}
				}
				it.Except = append(it.Except, id.Path)
				if p.acceptOp(")") {
					break
				}
				if err := p.expectOp(","); err != nil {
					return it, err
				}
			}
		}
		it.Text = strings.TrimSpace(p.src[start:p.peek().at])
		return it, nil
	}
	n, err := p.expr()
	if err != nil {
		return it, err
	}
	it.Expr = n
	end := p.peek().at
	if p.acceptKw("AS") {
		t := p.next()
		if t.kind != tIdent && t.kind != tQuoted {
			p.i--
			return it, p.fail("a column name after AS")
		}
		it.Alias = t.text
	} else if t := p.peek(); t.kind == tQuoted || t.kind == tIdent && !reserved[strings.ToUpper(t.text)] {
		p.i++
		it.Alias = t.text
	}
	it.Text = strings.TrimSpace(p.src[start:end])
	return it, nil
}

// expr: OR of ANDs of NOTs of predicated value expressions (Spark's booleanExpression).
func (p *parser) expr() (Node, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.isKw("OR") {
		at := p.next().at
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = &Binary{Op: "OR", L: l, R: r, At: at}
	}
	return l, nil
}

func (p *parser) and() (Node, error) {
	l, err := p.not()
	if err != nil {
		return nil, err
	}
	for p.isKw("AND") {
		at := p.next().at
		r, err := p.not()
		if err != nil {
			return nil, err
		}
		l = &Binary{Op: "AND", L: l, R: r, At: at}
	}
	return l, nil
}

func (p *parser) not() (Node, error) {
	if p.isKw("NOT") || p.isOp("!") {
		at := p.next().at
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return &Unary{Op: "NOT", X: x, At: at}, nil
	}
	return p.predicated()
}

// predicated: a comparison-level value expression followed by at most one predicate.
func (p *parser) predicated() (Node, error) {
	x, err := p.comparison()
	if err != nil {
		return nil, err
	}
	for {
		at := p.peek().at
		if p.acceptKw("IS") {
			not := p.acceptKw("NOT")
			if p.acceptKw("NULL") {
				x = &IsNull{X: x, Not: not, At: at}
				continue
			}
			if p.acceptKw("DISTINCT") {
				if err := p.expectKw("FROM"); err != nil {
					return nil, err
				}
				r, err := p.comparison()
				if err != nil {
					return nil, err
				}
				var n Node = &Binary{Op: "<=>", L: x, R: r, At: at}
				if !not {
					n = &Unary{Op: "NOT", X: n, At: at}
				}
				x = n
				continue
			}
			return nil, p.fail("NULL, NOT NULL or DISTINCT FROM after IS")
		}
		save := p.i
		not := p.acceptKw("NOT")
		switch {
		case p.acceptKw("IN"):
			if err := p.expectOp("("); err != nil {
				return nil, err
			}
			var list []Node
			for {
				e, err := p.expr()
				if err != nil {
					return nil, err
				}
				list = append(list, e)
				if p.acceptOp(")") {
					break
				}
				if err := p.expectOp(","); err != nil {
					return nil, err
				}
			}
			x = &In{X: x, List: list, Not: not, At: at}
		case p.acceptKw("BETWEEN"):
			lo, err := p.comparison()
			if err != nil {
				return nil, err
			}
			if err := p.expectKw("AND"); err != nil {
				return nil, err
			}
			hi, err := p.comparison()
			if err != nil {
				return nil, err
			}
			x = &Between{X: x, Lo: lo, Hi: hi, Not: not, At: at}
		case p.acceptKw("LIKE"):
			pat, err := p.comparison()
			if err != nil {
				return nil, err
			}
			lk := &Like{X: x, Pattern: pat, Not: not, At: at}
			if p.acceptKw("ESCAPE") {
				t := p.next()
				if t.kind != tString || len([]rune(t.text)) != 1 {
					p.i--
					return nil, p.fail("a one-character string after ESCAPE")
				}
				lk.Escape = []rune(t.text)[0]
			}
			x = lk
		case p.acceptKw("RLIKE") || p.acceptKw("REGEXP"):
			pat, err := p.comparison()
			if err != nil {
				return nil, err
			}
			x = &Like{X: x, Pattern: pat, Not: not, Regex: true, At: at}
		default:
			if not {
				p.i = save
				return nil, p.fail("IN, BETWEEN, LIKE or RLIKE after NOT")
			}
			return x, nil
		}
	}
}

var comparisonOps = map[string]string{"=": "=", "==": "=", "<>": "!=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "<=>": "<=>"}

func (p *parser) comparison() (Node, error) {
	l, err := p.additive()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		op, ok := comparisonOps[t.text]
		if t.kind != tOp || !ok {
			return l, nil
		}
		p.i++
		r, err := p.additive()
		if err != nil {
			return nil, err
		}
		l = &Binary{Op: op, L: l, R: r, At: t.at}
	}
}

func (p *parser) additive() (Node, error) {
	l, err := p.multiplicative()
	if err != nil {
		return nil, err
	}
	for p.isOp("+") || p.isOp("-") || p.isOp("||") {
		t := p.next()
		r, err := p.multiplicative()
		if err != nil {
			return nil, err
		}
		l = &Binary{Op: t.text, L: l, R: r, At: t.at}
	}
	return l, nil
}

func (p *parser) multiplicative() (Node, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.isOp("*") || p.isOp("/") || p.isOp("%") || p.isKw("DIV") {
		t := p.next()
		op := t.text
		if t.kind == tIdent {
			op = "DIV"
		}
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		l = &Binary{Op: op, L: l, R: r, At: t.at}
	}
	return l, nil
}

func (p *parser) unary() (Node, error) {
	if p.isOp("-") || p.isOp("+") {
		t := p.next()
		if n := p.peek(); t.text == "-" && n.kind == tNumber && n.at == t.at+1 {
			p.i++ // Spark's grammar reads -<number> as one literal (so -2147483648 is an int)
			return &Lit{Kind: LitNumber, Text: "-" + n.text, At: t.at}, nil
		}
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &Unary{Op: t.text, X: x, At: t.at}, nil
	}
	return p.postfix()
}

// postfix: a primary followed by .field accesses and [index] subscripts.
func (p *parser) postfix() (Node, error) {
	x, err := p.primary()
	if err != nil {
		return nil, err
	}
	for p.isOp(".") || p.isOp("[") {
		if p.isOp("[") {
			at := p.next().at
			i, err := p.expr()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp("]"); err != nil {
				return nil, err
			}
			x = &Index{X: x, I: i, At: at}
			continue
		}
		p.i++
		t := p.next()
		if t.kind != tIdent && t.kind != tQuoted {
			p.i--
			return nil, p.fail("a field name after '.'")
		}
		if id, ok := x.(*Ident); ok {
			id.Path = append(id.Path, t.text)
		} else {
			x = &FieldAccess{X: x, Name: t.text, At: t.at}
		}
	}
	return x, nil
}

func (p *parser) primary() (Node, error) {
	t := p.peek()
	switch t.kind {
	case tNumber:
		p.i++
		return &Lit{Kind: LitNumber, Text: t.text, At: t.at}, nil
	case tString:
		p.i++
		s := t.text
		for p.peek().kind == tString { // adjacent literals concatenate, as in Spark
			s += p.next().text
		}
		return &Lit{Kind: LitString, Text: s, At: t.at}, nil
	case tQuoted:
		p.i++
		return &Ident{Path: []string{t.text}, At: t.at}, nil
	case tOp:
		if t.text == "(" {
			p.i++
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			return x, nil
		}
		return nil, p.fail("an expression")
	case tEOF:
		return nil, p.fail("an expression")
	}
	up := strings.ToUpper(t.text)
	switch up {
	case "NULL":
		p.i++
		return &Lit{Kind: LitNull, At: t.at}, nil
	case "TRUE", "FALSE":
		p.i++
		return &Lit{Kind: LitBool, Text: up, At: t.at}, nil
	case "X":
		if n := p.peekAt(1); n.kind == tString && n.at == t.at+1 {
			p.i += 2
			return &Lit{Kind: LitBinary, Text: n.text, At: t.at}, nil
		}
	case "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ":
		if n := p.peekAt(1); n.kind == tString {
			p.i += 2
			k := LitDate
			if up != "DATE" {
				k = LitTimestamp
			}
			return &Lit{Kind: k, Text: n.text, At: t.at}, nil
		}
	case "INTERVAL":
		p.i++
		return p.interval(t.at)
	case "CASE":
		return p.caseExpr()
	case "CAST", "TRY_CAST":
		if p.peekAt(1).kind == tOp && p.peekAt(1).text == "(" {
			p.i += 2
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			if err := p.expectKw("AS"); err != nil {
				return nil, err
			}
			typ, err := p.typeName()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			return &Cast{X: x, To: typ, Try: up == "TRY_CAST", At: t.at}, nil
		}
	}
	if p.peekAt(1).kind == tOp && p.peekAt(1).text == "(" {
		p.i += 2
		c := &Call{Name: strings.ToLower(t.text), At: t.at}
		if p.acceptOp(")") {
			return c, nil
		}
		for {
			a, err := p.expr()
			if err != nil {
				return nil, err
			}
			c.Args = append(c.Args, a)
			if p.acceptOp(")") {
				return c, nil
			}
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
	}
	if reserved[up] {
		return nil, p.fail("an expression")
	}
	if up == "CURRENT_TIMESTAMP" || up == "CURRENT_DATE" { // Spark allows them without ()
		p.i++
		return &Call{Name: strings.ToLower(up), At: t.at}, nil
	}
	p.i++
	return &Ident{Path: []string{t.text}, At: t.at}, nil
}

func (p *parser) caseExpr() (Node, error) {
	at := p.next().at
	c := &Case{At: at}
	if !p.isKw("WHEN") {
		op, err := p.expr()
		if err != nil {
			return nil, err
		}
		c.Operand = op
	}
	for p.acceptKw("WHEN") {
		cond, err := p.expr()
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("THEN"); err != nil {
			return nil, err
		}
		then, err := p.expr()
		if err != nil {
			return nil, err
		}
		c.Whens = append(c.Whens, When{cond, then})
	}
	if len(c.Whens) == 0 {
		return nil, p.fail("WHEN")
	}
	if p.acceptKw("ELSE") {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		c.Else = e
	}
	if err := p.expectKw("END"); err != nil {
		return nil, err
	}
	return c, nil
}

// typeName parses a Spark type name: boolean, int/integer, bigint/long, double, float,
// decimal[(p[,s])], string, varchar(n), binary, date, timestamp[_ntz|_ltz].
func (p *parser) typeName() (Type, error) {
	t := p.peek()
	if t.kind != tIdent {
		return Type{}, p.fail("a type name")
	}
	p.i++
	switch strings.ToUpper(t.text) {
	case "BOOLEAN", "BOOL":
		return TBool, nil
	case "INT", "INTEGER":
		return TInt, nil
	case "BIGINT", "LONG":
		return TBigInt, nil
	case "DOUBLE", "FLOAT", "REAL":
		return TDouble, nil
	case "STRING", "VARCHAR", "CHAR":
		if p.acceptOp("(") {
			if p.next().kind != tNumber {
				p.i--
				return Type{}, p.fail("a length")
			}
			if err := p.expectOp(")"); err != nil {
				return Type{}, err
			}
		}
		return TString, nil
	case "DATE":
		return TDate, nil
	case "BINARY":
		return TBinary, nil
	case "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ":
		return TTimestamp, nil
	case "DECIMAL", "DEC", "NUMERIC":
		prec, scale := 10, 0
		if p.acceptOp("(") {
			n := p.next()
			if n.kind != tNumber {
				p.i--
				return Type{}, p.fail("a precision")
			}
			fmt.Sscan(n.text, &prec)
			if p.acceptOp(",") {
				s := p.next()
				if s.kind != tNumber {
					p.i--
					return Type{}, p.fail("a scale")
				}
				fmt.Sscan(s.text, &scale)
			}
			if err := p.expectOp(")"); err != nil {
				return Type{}, err
			}
		}
		if prec < 1 || prec > 38 || scale < 0 || scale > prec {
			return Type{}, &SyntaxError{Src: p.src, At: t.at, Found: fmt.Sprintf("decimal(%d,%d)", prec, scale), Expected: "a decimal with 1 ≤ precision ≤ 38 and 0 ≤ scale ≤ precision"}
		}
		return Decimal(prec, scale), nil
	}
	p.i--
	return Type{}, p.fail("a type name (boolean, int, bigint, double, decimal(p,s), string, binary, date, timestamp)")
}

// unescapeSQL writes the escape at the start of s (a backslash and what follows) to b and
// returns how many bytes it took, following Spark 4's unescapeSQLString: \uXXXX (a UTF-16
// unit; a surrogate pair written as two of them is one code point), \UXXXXXXXX (a code
// point), \[01][0-7][0-7] (octal), \0 \b \n \r \t \Z (U+001A), \% and \_ kept with their
// backslash (they are LIKE escapes), and any other character as itself.
func unescapeSQL(b *strings.Builder, s string) int {
	hex := func(s string, n int) (rune, bool) {
		if len(s) < n {
			return 0, false
		}
		v, err := strconv.ParseUint(s[:n], 16, 32)
		return rune(v), err == nil
	}
	switch c := s[1]; {
	case c == 'u':
		if r, ok := hex(s[2:], 4); ok {
			if utf16.IsSurrogate(r) && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
				if lo, ok := hex(s[8:], 4); ok && utf16.DecodeRune(r, lo) != utf8.RuneError {
					b.WriteRune(utf16.DecodeRune(r, lo))
					return 12
				}
			}
			b.WriteRune(r)
			return 6
		}
	case c == 'U':
		if r, ok := hex(s[2:], 8); ok && utf8.ValidRune(r) {
			b.WriteRune(r)
			return 10
		}
	case len(s) >= 4 && (c == '0' || c == '1') && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7':
		b.WriteRune(rune(c-'0')<<6 | rune(s[2]-'0')<<3 | rune(s[3]-'0'))
		return 4
	}
	switch c := s[1]; c {
	case '0':
		b.WriteByte(0)
	case 'b':
		b.WriteByte('\b')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'Z':
		b.WriteByte(0x1a)
	case '%', '_':
		b.WriteByte('\\')
		b.WriteByte(c)
	default:
		b.WriteByte(c)
	}
	return 2
}

// interval parses what follows INTERVAL: one or more quantity-unit pairs (INTERVAL 1 DAY 2
// HOURS is their sum, as in Spark), or a 'y-m' string with YEAR TO MONTH. Spark 4 refuses
// a literal that mixes year-month and day-time units; so does this parser.
func (p *parser) interval(at int) (Node, error) {
	var out Node
	ym, dt := false, false
	units := map[string]bool{"DAY": true, "HOUR": true, "MINUTE": true, "SECOND": true, "MILLISECOND": true, "MICROSECOND": true, "WEEK": true, "YEAR": true, "MONTH": true}
	for {
		save := p.i
		q := p.peek()
		neg := false
		if q.kind == tOp && q.text == "-" {
			neg = true
			p.i++
			q = p.peek()
		}
		isQty := q.kind == tString || q.kind == tNumber
		if out != nil && (!isQty || !units[strings.TrimSuffix(strings.ToUpper(p.peekAt(1).text), "S")]) {
			p.i = save // the literal ended: what follows belongs to the expression
			return out, nil
		}
		if !isQty {
			return nil, p.fail("a quantity after INTERVAL, as in INTERVAL '5' MINUTE")
		}
		p.i++
		unit := strings.TrimSuffix(strings.ToUpper(p.peek().text), "S")
		switch unit {
		case "DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND", "WEEK":
			dt = true
		case "YEAR", "MONTH":
			ym = true
			if unit == "YEAR" && strings.EqualFold(p.peekAt(1).text, "TO") && strings.EqualFold(p.peekAt(2).text, "MONTH") {
				p.i += 2
				unit = "YEAR TO MONTH"
			}
		default:
			return nil, p.fail("an interval unit (YEAR, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND, MILLISECOND, MICROSECOND, or YEAR TO MONTH)")
		}
		if ym && dt {
			return nil, p.fail("a unit of the same kind: Spark 4 cannot mix year-month and day-time units in one interval (add them one at a time: (ts + INTERVAL 1 MONTH) + INTERVAL 2 DAYS)")
		}
		p.i++
		text := q.text
		if neg {
			text = "-" + text
		}
		lit := &Lit{Kind: LitInterval, Text: text, Unit: unit, At: q.at}
		if out == nil {
			out = lit
		} else {
			out = &Binary{Op: "+", L: out, R: lit, At: at}
		}
	}
}
