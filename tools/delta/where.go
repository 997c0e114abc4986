package deltacmd

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/streamkit/streamkit/sink/delta"
)

// A partition predicate (optimize --where) is a small SQL subset evaluated on the partition
// values of each file:
//
//	expr := and ("OR" and)*        and := not ("AND" not)*       not := ["NOT"] atom
//	atom := "(" expr ")" | col op literal | col ["NOT"] "IN" "(" literal ("," literal)* ")"
//	      | col "IS" ["NOT"] "NULL"
//	op   := "=" | "!=" | "<>" | "<" | "<=" | ">" | ">="
//	literal := 'text' ('' escapes a quote) | number | TRUE | FALSE
//
// Columns must be partition columns (names may be quoted with double quotes or backticks).
// Values compare by the column's type (numbers numerically, dates and timestamps as instants,
// strings byte-wise). As in SQL, a comparison with a null partition value is false; an empty
// partition value is null.
type predicate func(values map[string]*string) bool

type token struct {
	kind string // "ident", "str", "num", "op", "(", ")", ","
	text string
}

func tokenize(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')' || c == ',':
			out = append(out, token{kind: string(c), text: string(c)})
			i++
		case c == '\'':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, fmt.Errorf("unterminated string starting at %q", s[i:])
				}
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						b.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			out = append(out, token{kind: "str", text: b.String()})
			i = j + 1
		case c == '"' || c == '`':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unterminated quoted name starting at %q", s[i:])
			}
			out = append(out, token{kind: "ident", text: s[i+1 : i+1+j]})
			i += j + 2
		case strings.ContainsRune("=!<>", rune(c)):
			j := i + 1
			if j < len(s) && strings.ContainsRune("=>", rune(s[j])) {
				j++
			}
			op := s[i:j]
			switch op {
			case "=", "!=", "<>", "<", "<=", ">", ">=":
			default:
				return nil, fmt.Errorf("unknown operator %q", op)
			}
			out = append(out, token{kind: "op", text: op})
			i = j
		case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
			j := i + 1
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' ||
				((s[j] == '-' || s[j] == '+') && (s[j-1] == 'e' || s[j-1] == 'E'))) {
				j++
			}
			out = append(out, token{kind: "num", text: s[i:j]})
			i = j
		case c == '_' || unicode.IsLetter(rune(c)):
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] == '.' || unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j]))) {
				j++
			}
			out = append(out, token{kind: "ident", text: s[i:j]})
			i = j
		default:
			return nil, fmt.Errorf("unexpected character %q", c)
		}
	}
	return out, nil
}

type parser struct {
	toks  []token
	pos   int
	types map[string]delta.DataType // partition column → type
	names map[string]string         // lower-case name → partition column
}

// parseWhere compiles a partition predicate against the table's partition columns.
func parseWhere(src string, s *delta.Snapshot) (predicate, error) {
	if strings.TrimSpace(src) == "" {
		return func(map[string]*string) bool { return true }, nil
	}
	toks, err := tokenize(src)
	if err != nil {
		return nil, fmt.Errorf("--where %q: %w", src, err)
	}
	p := &parser{toks: toks, types: map[string]delta.DataType{}, names: map[string]string{}}
	for _, c := range s.PartitionColumns() {
		if f := s.Schema().Field(c); f != nil {
			p.types[c] = f.Type
			p.names[strings.ToLower(c)] = c
		}
	}
	pred, err := p.or()
	if err == nil && p.pos < len(p.toks) {
		err = fmt.Errorf("unexpected %q", p.toks[p.pos].text)
	}
	if err != nil {
		return nil, fmt.Errorf("--where %q: %w", src, err)
	}
	return pred, nil
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return token{}
}

func (p *parser) keyword(k string) bool {
	t := p.peek()
	if t.kind == "ident" && strings.EqualFold(t.text, k) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) or() (predicate, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.keyword("OR") {
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		a, b := l, r
		l = func(v map[string]*string) bool { return a(v) || b(v) }
	}
	return l, nil
}

func (p *parser) and() (predicate, error) {
	l, err := p.not()
	if err != nil {
		return nil, err
	}
	for p.keyword("AND") {
		r, err := p.not()
		if err != nil {
			return nil, err
		}
		a, b := l, r
		l = func(v map[string]*string) bool { return a(v) && b(v) }
	}
	return l, nil
}

func (p *parser) not() (predicate, error) {
	if p.keyword("NOT") {
		a, err := p.atom()
		if err != nil {
			return nil, err
		}
		return func(v map[string]*string) bool { return !a(v) }, nil
	}
	return p.atom()
}

func (p *parser) literal() (string, error) {
	t := p.peek()
	switch {
	case t.kind == "str" || t.kind == "num":
		p.pos++
		return t.text, nil
	case t.kind == "ident" && (strings.EqualFold(t.text, "true") || strings.EqualFold(t.text, "false")):
		p.pos++
		return strings.ToLower(t.text), nil
	case t.kind == "":
		return "", fmt.Errorf("a value is missing at the end")
	}
	return "", fmt.Errorf("expected a value, got %q", t.text)
}

func (p *parser) atom() (predicate, error) {
	t := p.peek()
	if t.kind == "(" {
		p.pos++
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.peek().kind != ")" {
			return nil, fmt.Errorf("missing )")
		}
		p.pos++
		return e, nil
	}
	if t.kind != "ident" {
		return nil, fmt.Errorf("expected a partition column, got %q", t.text)
	}
	p.pos++
	col, ok := p.names[strings.ToLower(t.text)]
	if !ok {
		var cols []string
		for _, c := range p.names {
			cols = append(cols, c)
		}
		return nil, fmt.Errorf("%s is not a partition column (partition columns: %s); optimize filters whole files by partition", t.text, strings.Join(cols, ", "))
	}
	typ := p.types[col]
	get := func(v map[string]*string) (string, bool) {
		s := v[col]
		if s == nil || *s == "" {
			return "", false
		}
		return *s, true
	}
	if p.keyword("IS") {
		neg := p.keyword("NOT")
		if !p.keyword("NULL") {
			return nil, fmt.Errorf("expected NULL after IS")
		}
		return func(v map[string]*string) bool { _, ok := get(v); return ok == neg }, nil
	}
	neg := p.keyword("NOT")
	if p.keyword("IN") {
		if p.peek().kind != "(" {
			return nil, fmt.Errorf("expected ( after IN")
		}
		p.pos++
		var lits []string
		for {
			l, err := p.literal()
			if err != nil {
				return nil, err
			}
			if _, err := compare(typ, l, l); err != nil {
				return nil, fmt.Errorf("%s: %w", col, err)
			}
			lits = append(lits, l)
			if p.peek().kind == "," {
				p.pos++
				continue
			}
			if p.peek().kind != ")" {
				return nil, fmt.Errorf("expected , or ) in the IN list")
			}
			p.pos++
			break
		}
		return func(v map[string]*string) bool {
			s, ok := get(v)
			if !ok {
				return false
			}
			for _, l := range lits {
				if c, err := compare(typ, s, l); err == nil && c == 0 {
					return !neg
				}
			}
			return neg
		}, nil
	}
	if neg {
		return nil, fmt.Errorf("expected IN after NOT")
	}
	op := p.peek()
	if op.kind != "op" {
		return nil, fmt.Errorf("expected a comparison after %s", col)
	}
	p.pos++
	lit, err := p.literal()
	if err != nil {
		return nil, err
	}
	if _, err := compare(typ, lit, lit); err != nil {
		return nil, fmt.Errorf("%s: %w", col, err)
	}
	return func(v map[string]*string) bool {
		s, ok := get(v)
		if !ok {
			return false
		}
		c, err := compare(typ, s, lit)
		if err != nil {
			return false
		}
		switch op.text {
		case "=":
			return c == 0
		case "!=", "<>":
			return c != 0
		case "<":
			return c < 0
		case "<=":
			return c <= 0
		case ">":
			return c > 0
		}
		return c >= 0
	}, nil
}

// timestampLayouts are the partition value forms written by streamkit, Spark and delta-rs.
var timestampLayouts = []string{
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02",
}

func parseTime(s string) (time.Time, error) {
	for _, l := range timestampLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a timestamp", s)
}

// compare orders two partition value strings of Delta type typ.
func compare(typ delta.DataType, a, b string) (int, error) {
	switch t := typ.(type) {
	case delta.DecimalType:
		x, ok1 := new(big.Rat).SetString(a)
		y, ok2 := new(big.Rat).SetString(b)
		if !ok1 || !ok2 {
			return 0, fmt.Errorf("%q or %q is not a decimal", a, b)
		}
		return x.Cmp(y), nil
	case delta.PrimitiveType:
		switch t {
		case delta.TypeByte, delta.TypeShort, delta.TypeInteger, delta.TypeLong:
			x, err1 := strconv.ParseInt(a, 10, 64)
			y, err2 := strconv.ParseInt(b, 10, 64)
			if err1 != nil || err2 != nil {
				return 0, fmt.Errorf("%q or %q is not an integer", a, b)
			}
			return cmp3(x < y, x > y), nil
		case delta.TypeFloat, delta.TypeDouble:
			x, err1 := strconv.ParseFloat(a, 64)
			y, err2 := strconv.ParseFloat(b, 64)
			if err1 != nil || err2 != nil {
				return 0, fmt.Errorf("%q or %q is not a number", a, b)
			}
			return cmp3(x < y, x > y), nil
		case delta.TypeBoolean:
			x, err1 := strconv.ParseBool(a)
			y, err2 := strconv.ParseBool(b)
			if err1 != nil || err2 != nil {
				return 0, fmt.Errorf("%q or %q is not a boolean", a, b)
			}
			return cmp3(!x && y, x && !y), nil
		case delta.TypeDate, delta.TypeTimestamp, delta.TypeTimestampNTZ:
			x, err := parseTime(a)
			if err != nil {
				return 0, err
			}
			y, err := parseTime(b)
			if err != nil {
				return 0, err
			}
			return x.Compare(y), nil
		}
	}
	return strings.Compare(a, b), nil
}

func cmp3(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}
