package delta

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	dl "github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/expr"
)

// Predicate is a read-delta --where condition. It is a Spark SQL boolean expression over any
// column of the table, in the language of `streamkit filter` (package expr): parsed and
// type-checked against the table schema before anything is read, evaluated on every batch of
// the files that are read (a row whose predicate is false or NULL is dropped), and used to
// skip files whose partition values or statistics prove that no row matches (prune.go).
//
// A condition the older partition syntax ([Filter]) accepts keeps that syntax's meaning, so
// every --where that worked before still selects the same rows: bare words are values
// (date >= 2024-05-01, region = eu), compared as the partition column's type. Such a
// condition reads no row: it is decided per file from the partition values.
type Predicate struct {
	src    string
	legacy *Filter // the partition syntax accepted src
	cols   []string
	prune  pnode
	types  map[string]arrow.DataType // partition column types
	phys   map[string]string         // column mapping: partition value keys (nil: the names)
}

// String returns the condition as given.
func (p *Predicate) String() string { return p.src }

// Partition returns the partition filter when the partition syntax accepted the condition
// (nil otherwise): then the partition values decide every file and no row is evaluated.
func (p *Predicate) Partition() *Filter { return p.legacy }

// Columns lists the top-level table columns the condition reads, in table order.
func (p *Predicate) Columns() []string {
	if p.legacy != nil {
		return p.legacy.Columns()
	}
	return p.cols
}

// Compile compiles the condition (not one of the partition syntax) for batches of schema,
// which must hold the columns Columns lists.
func (p *Predicate) Compile(schema *arrow.Schema, mem memory.Allocator) (*expr.Program, error) {
	return expr.CompilePredicate(p.src, schema, expr.Options{Mem: mem})
}

// Verdict says what add's partition values and statistics prove about the condition. A
// partition value that does not parse as its column's type is an error.
func (p *Predicate) Verdict(add *dl.Add) (Verdict, error) {
	if p.legacy != nil {
		ok, err := p.legacy.MatchPartitionValues(add.PartitionValues)
		if err != nil || !ok {
			return VerdictNone, err
		}
		return VerdictAll, nil
	}
	f := &fileFacts{add: add, types: p.types, phys: p.phys}
	if f.empty() {
		return VerdictNone, nil
	}
	v, err := p.prune.verdict(f)
	if err != nil {
		return VerdictSome, fmt.Errorf("data file %s: %w", add.Path, err)
	}
	return v, nil
}

// ParsePredicate parses a --where condition for the table meta describes: in the partition
// syntax when that accepts it (see [Predicate]), else as Spark SQL, type-checked against the
// table's canonical Arrow schema ([dl.StructType.ToArrow]). A Spark SQL error (*expr.SyntaxError,
// *expr.TypeError) comes back wrapped, with its caret. An empty or blank condition gives nil.
func ParsePredicate(src string, meta *dl.Metadata) (*Predicate, error) {
	if strings.TrimSpace(src) == "" {
		return nil, nil
	}
	if f, err := ParseTableFilter(src, meta); err == nil {
		return &Predicate{src: src, legacy: f}, nil
	}
	st, err := meta.Schema()
	if err != nil {
		return nil, err
	}
	full, err := st.ToArrow()
	if err != nil {
		return nil, err
	}
	n, err := expr.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("--where: %w", err)
	}
	if _, err := expr.CompilePredicate(src, full, expr.Options{}); err != nil {
		return nil, fmt.Errorf("--where: %w", err)
	}
	types, err := partitionTypes(st, meta.PartitionColumns)
	if err != nil {
		return nil, err
	}
	p := &Predicate{src: src, types: types, phys: physicalColumns(st, meta)}
	used := map[int]bool{}
	for _, ref := range expr.ColumnRefs(n) {
		if i := fieldIndex(full.Fields(), ref[0]); i >= 0 {
			used[i] = true
		}
	}
	for i, f := range full.Fields() {
		if used[i] {
			p.cols = append(p.cols, f.Name)
		}
	}
	b := &pruneBuilder{st: st, full: full, parts: meta.PartitionColumns, mode: meta.ColumnMapping()}
	p.prune = b.derive(n, false)
	return p, nil
}

// fieldIndex finds a column by name as expr resolves it: exact, else ignoring case; -1 when
// absent.
func fieldIndex(fields []arrow.Field, name string) int {
	for i, f := range fields {
		if f.Name == name {
			return i
		}
	}
	for i, f := range fields {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// pruneBuilder derives the pruning tree of a parsed condition.
type pruneBuilder struct {
	st    *dl.StructType
	full  *arrow.Schema
	parts []string
	mode  dl.ColumnMappingMode // column mapping: statistics are keyed by physical names
}

var (
	negateOp = map[string]string{"=": "!=", "!=": "=", "<": ">=", ">=": "<", "<=": ">", ">": "<="}
	flipOp   = map[string]string{"=": "=", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}
)

func pand(l, r pnode) pnode { return pAnd{l, r} }
func por(l, r pnode) pnode  { return pOr{l, r} }

// derive returns the pruning tree of n, or of NOT n when neg.
func (b *pruneBuilder) derive(n expr.Node, neg bool) pnode {
	some := pConst(VerdictSome)
	switch n := n.(type) {
	case *expr.Unary:
		if n.Op == "NOT" {
			return b.derive(n.X, !neg)
		}
	case *expr.Binary:
		switch n.Op {
		case "AND", "OR":
			l, r := b.derive(n.L, neg), b.derive(n.R, neg)
			if (n.Op == "AND") != neg {
				return pand(l, r)
			}
			return por(l, r)
		case "=", "!=", "<", "<=", ">", ">=":
			return b.cmp(n.L, n.Op, n.R, neg)
		}
	case *expr.Between: // Spark rewrites it to x >= lo AND x <= hi
		not := n.Not != neg
		ge, le := b.cmp(n.X, ">=", n.Lo, not), b.cmp(n.X, "<=", n.Hi, not)
		if not {
			return por(ge, le)
		}
		return pand(ge, le)
	case *expr.In:
		return b.in(n, n.Not != neg)
	case *expr.IsNull:
		if col := b.column(n.X, true); col != nil {
			return &pNull{col: col, not: n.Not != neg}
		}
	case *expr.Lit:
		switch n.Kind {
		case expr.LitNull:
			return pConst(VerdictNone)
		case expr.LitBool:
			if (n.Text == "TRUE") != neg {
				return pConst(VerdictAll)
			}
			return pConst(VerdictNone)
		}
	}
	return some
}

// cmp derives `l op r` (negated when neg) where one side is a column and the other a literal.
func (b *pruneBuilder) cmp(l expr.Node, op string, r expr.Node, neg bool) pnode {
	col := b.column(l, false)
	lit := r
	if col == nil {
		if col = b.column(r, false); col == nil {
			return pConst(VerdictSome)
		}
		lit, op = l, flipOp[op]
	}
	if neg {
		op = negateOp[op]
	}
	lt, sc, ok := literal(lit)
	if !ok {
		return pConst(VerdictSome)
	}
	d, cast, ok := compareDomain(col.t, []expr.Type{lt})
	if !ok {
		return pConst(VerdictSome)
	}
	return b.leaf(col, op, d, cast, lit, lt, sc)
}

// leaf builds `col op lit` in domain d, casting the literal to cast first (when set).
func (b *pruneBuilder) leaf(col *pcol, op string, d domain, cast expr.Type, lit expr.Node, lt expr.Type, sc scalar.Scalar) pnode {
	if sc.IsValid() && cast.Kind != expr.KNull {
		var ok bool
		if lt, sc, ok = expr.Constant(&expr.Cast{X: lit, To: cast, At: lit.Pos()}); !ok {
			return pConst(VerdictSome) // the cast fails per row, as in Spark: say nothing
		}
	}
	if !sc.IsValid() {
		return &pCmp{col: col, op: op, null: true}
	}
	v, ok := litDval(d, lt, sc)
	if !ok {
		return pConst(VerdictSome)
	}
	return &pCmp{col: col, op: op, dom: d, lit: v}
}

// in derives x [NOT] IN (list): an OR of equalities (NOT IN: an AND of inequalities), all in
// the domain the whole list is compared in.
func (b *pruneBuilder) in(n *expr.In, not bool) pnode {
	col := b.column(n.X, false)
	if col == nil || len(n.List) == 0 {
		return pConst(VerdictSome)
	}
	types := make([]expr.Type, len(n.List))
	scs := make([]scalar.Scalar, len(n.List))
	for i, it := range n.List {
		var ok bool
		if types[i], scs[i], ok = literal(it); !ok {
			return pConst(VerdictSome)
		}
	}
	d, cast, ok := compareDomain(col.t, types)
	if !ok {
		return pConst(VerdictSome)
	}
	var out pnode
	for i, it := range n.List {
		op := "="
		if not {
			op = "!="
		}
		leaf := b.leaf(col, op, d, cast, it, types[i], scs[i])
		switch {
		case out == nil:
			out = leaf
		case not:
			out = pand(out, leaf)
		default:
			out = por(out, leaf)
		}
	}
	return out
}

// literal folds a literal operand: a literal, a signed literal or a cast of one (nothing
// else, so that no function is evaluated ahead of its rows).
func literal(n expr.Node) (expr.Type, scalar.Scalar, bool) {
	if !literalNode(n) {
		return expr.Type{}, nil, false
	}
	t, sc, ok := expr.Constant(n)
	if !ok {
		return expr.Type{}, nil, false
	}
	return t, sc, true
}

func literalNode(n expr.Node) bool {
	switch n := n.(type) {
	case *expr.Lit:
		return n.Kind != expr.LitInterval
	case *expr.Unary:
		return n.Op != "NOT" && literalNode(n.X)
	case *expr.Cast:
		return !n.Try && literalNode(n.X)
	}
	return false
}

// column resolves a column operand as expr does (top level exact, else ignoring case; struct
// fields likewise) to a column with usable statistics: a partition column, or a data column
// (or struct field) of a primitive type; binary only for IS NULL (anyType). Otherwise nil.
func (b *pruneBuilder) column(n expr.Node, anyType bool) *pcol {
	id, ok := n.(*expr.Ident)
	if !ok {
		return nil
	}
	i := fieldIndex(b.full.Fields(), id.Path[0])
	if i < 0 || i >= len(b.st.Fields) {
		return nil
	}
	sf := b.st.Fields[i]
	dt := b.full.Field(i).Type
	c := &pcol{}
	for _, p := range b.parts {
		if strings.EqualFold(p, sf.Name) {
			c.part = p
		}
	}
	if c.part != "" && len(id.Path) > 1 {
		return nil
	}
	c.stats = append(c.stats, b.statsName(sf))
	for _, name := range id.Path[1:] {
		dst, ok := sf.Type.(*dl.StructType)
		ast, ok2 := dt.(*arrow.StructType)
		if !ok || !ok2 || len(dst.Fields) != ast.NumFields() {
			return nil
		}
		j := -1
		for k, f := range dst.Fields {
			if f.Name == name || j < 0 && strings.EqualFold(f.Name, name) {
				j = k
			}
		}
		if j < 0 {
			return nil
		}
		sf, dt = dst.Fields[j], ast.Field(j).Type
		c.stats = append(c.stats, b.statsName(sf))
	}
	t, ok := expr.FromArrow(dt)
	if !ok {
		return nil
	}
	switch t.Kind {
	case expr.KBool, expr.KInt, expr.KBigInt, expr.KDecimal, expr.KDouble, expr.KString, expr.KDate, expr.KTimestamp:
	case expr.KBinary:
		if !anyType {
			return nil
		}
	default:
		return nil
	}
	c.dt, c.t = dt, t
	c.fromFloat = t.Kind == expr.KDouble && widenedFromFloat(sf)
	return c
}

// statsName is the key of a field's statistics: its physical name under column mapping.
func (b *pruneBuilder) statsName(f dl.StructField) string {
	return f.PhysicalName(b.mode)
}
