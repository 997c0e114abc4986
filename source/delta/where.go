package delta

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	dl "github.com/streamkit/streamkit/delta"
)

// Filter is a predicate on partition columns, evaluated per data file from its
// partitionValues: read-delta --where and backfill --from-where skip the files whose
// partition does not match without opening them, delta optimize --where compacts only the
// matching partitions.
//
// Grammar (keywords case-insensitive):
//
//	expr    := and { OR and }
//	and     := unary { AND unary }
//	unary   := NOT unary | '(' expr ')' | pred
//	pred    := col op literal | col [NOT] IN '(' literal {',' literal} ')' | col IS [NOT] NULL
//	op      := = | == | != | <> | < | <= | > | >=
//	literal := 'text' | "text" | bare word (2024-01-01, 42, true, 2024-01-01T10:00:00Z …)
//
// Literals are parsed as the column's type (dates as 2024-01-01, timestamps as partition values
// or RFC 3339, a bare date meaning midnight UTC). Comparisons follow SQL three-valued logic: a
// null partition value matches only IS NULL (and NOT of an unknown is unknown, which does not
// match).
type Filter struct {
	root  node
	src   string
	cols  []string
	types map[string]arrow.DataType // of cols
	phys  map[string]string         // column mapping: the partition value key of each column (nil: its name)
}

// String returns the filter as given.
func (f *Filter) String() string { return f.src }

// Columns lists the partition columns the filter reads.
func (f *Filter) Columns() []string { return f.cols }

type tri int8

const (
	triFalse tri = iota
	triTrue
	triUnknown
)

type node interface {
	eval(pv map[string]value) tri
}

type andNode struct{ l, r node }
type orNode struct{ l, r node }
type notNode struct{ n node }
type cmpNode struct {
	col string
	dt  arrow.DataType
	op  string
	lit value
}
type inNode struct {
	col  string
	dt   arrow.DataType
	not  bool
	lits []value
}
type nullNode struct {
	col string
	not bool
}

func (n andNode) eval(pv map[string]value) tri {
	l := n.l.eval(pv)
	if l == triFalse {
		return triFalse
	}
	r := n.r.eval(pv)
	switch {
	case r == triFalse:
		return triFalse
	case l == triTrue && r == triTrue:
		return triTrue
	}
	return triUnknown
}

func (n orNode) eval(pv map[string]value) tri {
	l := n.l.eval(pv)
	if l == triTrue {
		return triTrue
	}
	r := n.r.eval(pv)
	switch {
	case r == triTrue:
		return triTrue
	case l == triFalse && r == triFalse:
		return triFalse
	}
	return triUnknown
}

func (n notNode) eval(pv map[string]value) tri {
	switch n.n.eval(pv) {
	case triTrue:
		return triFalse
	case triFalse:
		return triTrue
	}
	return triUnknown
}

func (n cmpNode) eval(pv map[string]value) tri {
	v := pv[n.col]
	if v.null || n.lit.null {
		return triUnknown
	}
	c := compare(n.dt, v, n.lit)
	var ok bool
	switch n.op {
	case "=":
		ok = c == 0
	case "!=":
		ok = c != 0
	case "<":
		ok = c < 0
	case "<=":
		ok = c <= 0
	case ">":
		ok = c > 0
	case ">=":
		ok = c >= 0
	}
	if ok {
		return triTrue
	}
	return triFalse
}

func (n inNode) eval(pv map[string]value) tri {
	v := pv[n.col]
	if v.null {
		return triUnknown
	}
	res := triFalse
	for _, l := range n.lits {
		if l.null {
			res = triUnknown
			continue
		}
		if compare(n.dt, v, l) == 0 {
			res = triTrue
			break
		}
	}
	if n.not {
		return notNode{constNode(res)}.eval(pv)
	}
	return res
}

type constNode tri

func (c constNode) eval(map[string]value) tri { return tri(c) }

func (n nullNode) eval(pv map[string]value) tri {
	if pv[n.col].null != n.not {
		return triTrue
	}
	return triFalse
}

// ParseFilter parses a --where expression against the table's partition columns, given as
// their canonical Arrow types. A column that is not a partition column is an error saying so.
func ParseFilter(src string, partCols []string, types map[string]arrow.DataType) (*Filter, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, fmt.Errorf("--where %q: %w", src, err)
	}
	p := &parser{toks: toks, partCols: partCols, types: types, used: map[string]bool{}}
	n, err := p.expr()
	if err == nil && p.pos < len(p.toks) {
		err = fmt.Errorf("unexpected %q", p.toks[p.pos].text)
	}
	if err != nil {
		return nil, fmt.Errorf("--where %q: %w", src, err)
	}
	f := &Filter{root: n, src: src, types: map[string]arrow.DataType{}}
	for _, c := range partCols {
		if p.used[c] {
			f.cols = append(f.cols, c)
			f.types[c] = types[c]
		}
	}
	return f, nil
}

// ParseTableFilter parses a --where expression against the partition columns of the table
// meta describes (typed as [dl.StructType.ToArrow] maps them). An empty or blank expression
// gives a nil Filter, which matches every file.
func ParseTableFilter(src string, meta *dl.Metadata) (*Filter, error) {
	if strings.TrimSpace(src) == "" {
		return nil, nil
	}
	st, err := meta.Schema()
	if err != nil {
		return nil, err
	}
	types, err := partitionTypes(st, meta.PartitionColumns)
	if err != nil {
		return nil, err
	}
	f, err := ParseFilter(src, meta.PartitionColumns, types)
	if f != nil {
		f.phys = physicalColumns(st, meta)
	}
	return f, err
}

// physicalColumns maps each top-level column to its physical name under the table's column
// mapping (the key of its partition value); nil without column mapping.
func physicalColumns(st *dl.StructType, meta *dl.Metadata) map[string]string {
	mode := meta.ColumnMapping()
	if !mode.Mapped() {
		return nil
	}
	m := make(map[string]string, len(st.Fields))
	for i := range st.Fields {
		m[st.Fields[i].Name] = st.Fields[i].PhysicalName(mode)
	}
	return m
}

// partitionTypes returns the canonical Arrow type of each partition column of st.
func partitionTypes(st *dl.StructType, partCols []string) (map[string]arrow.DataType, error) {
	types := make(map[string]arrow.DataType, len(partCols))
	for _, c := range partCols {
		f := st.Field(c)
		if f == nil {
			return nil, fmt.Errorf("partition column %q is not in the schema", c)
		}
		sc, err := (&dl.StructType{Fields: []dl.StructField{*f}}).ToArrow()
		if err != nil {
			return nil, err
		}
		types[c] = sc.Field(0).Type
	}
	return types, nil
}

// Match evaluates the filter on a file's parsed partition values.
func (f *Filter) Match(pv map[string]value) bool {
	return f == nil || f.root.eval(pv) == triTrue
}

// MatchPartitionValues evaluates the filter on a file's partition values as serialized in
// the log (an add action's partitionValues; nil or empty is null). Only the columns the filter
// reads are parsed; a value that does not parse as its column's type is an error. A nil
// Filter matches every file.
func (f *Filter) MatchPartitionValues(raw map[string]*string) (bool, error) {
	if f == nil {
		return true, nil
	}
	pv := make(map[string]value, len(f.cols))
	for _, c := range f.cols {
		key := c
		if p, ok := f.phys[c]; ok {
			key = p
		}
		v, err := parseValue(f.types[c], lookupPartitionValue(raw, key))
		if err != nil {
			return false, fmt.Errorf("partition column %s: %w", c, err)
		}
		pv[c] = v
	}
	return f.Match(pv), nil
}

type token struct {
	text   string
	quoted bool // a 'quoted' or "quoted" literal
	ident  bool // a `quoted` identifier
	op     bool // punctuation or operator
}

func lex(s string) ([]token, error) {
	var out []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')' || c == ',':
			out = append(out, token{text: string(c), op: true})
			i++
		case c == '\'' || c == '"':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, fmt.Errorf("unterminated quote")
				}
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c { // doubled quote = literal quote
						b.WriteByte(c)
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			out = append(out, token{text: b.String(), quoted: true})
			i = j + 1
		case c == '`':
			j := strings.IndexByte(s[i+1:], '`')
			if j < 0 {
				return nil, fmt.Errorf("unterminated backquote")
			}
			out = append(out, token{text: s[i+1 : i+1+j], ident: true})
			i += j + 2
		case strings.ContainsRune("=!<>", rune(c)):
			j := i + 1
			for j < len(s) && strings.ContainsRune("=!<>", rune(s[j])) {
				j++
			}
			op := s[i:j]
			switch op {
			case "=", "==":
				op = "="
			case "!=", "<>":
				op = "!="
			case "<", "<=", ">", ">=":
			default:
				return nil, fmt.Errorf("unknown operator %q", op)
			}
			out = append(out, token{text: op, op: true})
			i = j
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n\r(),=!<>'\"", rune(s[j])) {
				j++
			}
			out = append(out, token{text: s[i:j]})
			i = j
		}
	}
	return out, nil
}

type parser struct {
	toks     []token
	pos      int
	partCols []string
	types    map[string]arrow.DataType
	used     map[string]bool
}

func (p *parser) peek() (token, bool) {
	if p.pos >= len(p.toks) {
		return token{}, false
	}
	return p.toks[p.pos], true
}

func (p *parser) keyword(kw string) bool {
	t, ok := p.peek()
	if ok && !t.quoted && !t.op && strings.EqualFold(t.text, kw) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) punct(s string) bool {
	t, ok := p.peek()
	if ok && t.op && t.text == s {
		p.pos++
		return true
	}
	return false
}

func (p *parser) expr() (node, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.keyword("or") {
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = orNode{l, r}
	}
	return l, nil
}

func (p *parser) and() (node, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.keyword("and") {
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		l = andNode{l, r}
	}
	return l, nil
}

func (p *parser) unary() (node, error) {
	if p.keyword("not") {
		n, err := p.unary()
		if err != nil {
			return nil, err
		}
		return notNode{n}, nil
	}
	if p.punct("(") {
		n, err := p.expr()
		if err != nil {
			return nil, err
		}
		if !p.punct(")") {
			return nil, fmt.Errorf("missing ')'")
		}
		return n, nil
	}
	return p.pred()
}

func (p *parser) column() (string, arrow.DataType, error) {
	t, ok := p.peek()
	if !ok {
		return "", nil, fmt.Errorf("expected a column name at the end")
	}
	if t.op {
		return "", nil, fmt.Errorf("expected a column name, got %q", t.text)
	}
	p.pos++
	name := t.text
	for _, c := range p.partCols {
		if c == name {
			p.used[c] = true
			return c, p.types[c], nil
		}
	}
	for _, c := range p.partCols {
		if strings.EqualFold(c, name) {
			p.used[c] = true
			return c, p.types[c], nil
		}
	}
	if len(p.partCols) == 0 {
		return "", nil, fmt.Errorf("column %q: the table has no partition columns; --where filters partition columns only", name)
	}
	return "", nil, fmt.Errorf("column %q is not a partition column (partition columns: %s); --where filters partition columns only", name, strings.Join(p.partCols, ", "))
}

func (p *parser) literal(col string, dt arrow.DataType) (value, error) {
	t, ok := p.peek()
	if !ok || (t.op && !t.quoted) {
		return value{}, fmt.Errorf("expected a value for %s", col)
	}
	p.pos++
	if !t.quoted && strings.EqualFold(t.text, "null") {
		return value{null: true}, nil
	}
	s := t.text
	v, err := parseValue(dt, &s)
	if err != nil {
		return value{}, fmt.Errorf("column %s: %w", col, err)
	}
	if v.null { // an empty string literal compares as an empty string, never as null
		if _, isStr := dt.(*arrow.StringType); isStr {
			return value{s: ""}, nil
		}
		return value{}, fmt.Errorf("column %s: empty value", col)
	}
	return v, nil
}

func (p *parser) pred() (node, error) {
	col, dt, err := p.column()
	if err != nil {
		return nil, err
	}
	if p.keyword("is") {
		not := p.keyword("not")
		if !p.keyword("null") {
			return nil, fmt.Errorf("expected NULL after IS")
		}
		return nullNode{col: col, not: not}, nil
	}
	not := p.keyword("not")
	if p.keyword("in") {
		if !p.punct("(") {
			return nil, fmt.Errorf("expected '(' after IN")
		}
		n := inNode{col: col, dt: dt, not: not}
		for {
			v, err := p.literal(col, dt)
			if err != nil {
				return nil, err
			}
			n.lits = append(n.lits, v)
			if p.punct(")") {
				break
			}
			if !p.punct(",") {
				return nil, fmt.Errorf("expected ',' or ')' in IN list")
			}
		}
		return n, nil
	}
	if not {
		return nil, fmt.Errorf("expected IN after NOT")
	}
	t, ok := p.peek()
	if !ok || !t.op || t.text == "(" || t.text == ")" || t.text == "," {
		return nil, fmt.Errorf("expected an operator (=, !=, <, <=, >, >=, IN, IS NULL) after %s", col)
	}
	p.pos++
	lit, err := p.literal(col, dt)
	if err != nil {
		return nil, err
	}
	return cmpNode{col: col, dt: dt, op: t.text, lit: lit}, nil
}
