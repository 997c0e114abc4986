package expr

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Projection is a compiled select list (Spark's selectExpr): the output schema and, per
// output column, either an input column passed through or a computed expression.
type Projection struct {
	schema *arrow.Schema
	cols   []projCol
}

type projCol struct {
	in   []int    // a passed-through column or struct field path (nil: computed)
	prog *Program // a computed column
}

// CompileSelect parses and type-checks a select list against schema. `*` expands to every
// input column, `* EXCEPT (a, b)` to all but those, `s.*` to the fields of struct s; an
// expression without an alias is named by its text (a bare column keeps its name). Two
// output columns with one name are an error.
func CompileSelect(src string, schema *arrow.Schema, opts Options) (*Projection, error) {
	items, err := ParseSelect(src)
	if err != nil {
		return nil, err
	}
	p := &Projection{}
	var fields []arrow.Field
	seen := map[string]bool{}
	add := func(f arrow.Field, col projCol, at int) error {
		if seen[strings.ToLower(f.Name)] {
			return &TypeError{Src: src, At: at, Msg: fmt.Sprintf("select: two output columns are named %s; rename one with AS", quoteName(f.Name))}
		}
		seen[strings.ToLower(f.Name)] = true
		fields = append(fields, f)
		p.cols = append(p.cols, col)
		return nil
	}
	c := &checker{src: src, schema: schema}
	for _, it := range items {
		if it.Star {
			base := schema.Fields()
			var prefix []int
			if len(it.StarPath) > 0 {
				path, _, err := c.resolve(&Ident{Path: it.StarPath, At: it.At})
				if err != nil {
					return nil, err
				}
				prefix = path
				st, ok := fieldAt(schema, prefix).Type.(*arrow.StructType)
				if !ok {
					return nil, &TypeError{Src: src, At: it.At, Msg: fmt.Sprintf("%s.* needs a struct, but %s is %s", strings.Join(it.StarPath, "."), strings.Join(it.StarPath, "."), fieldAt(schema, prefix).Type)}
				}
				base = st.Fields()
			}
			except := map[string]bool{}
			for _, e := range it.Except {
				if _, _, err := c.resolve(&Ident{Path: append(append([]string{}, it.StarPath...), e...), At: it.At}); err != nil {
					return nil, err
				}
				except[strings.ToLower(strings.Join(e, "."))] = true
			}
			for i, f := range base {
				if except[strings.ToLower(f.Name)] {
					continue
				}
				if err := add(f, projCol{in: append(append([]int{}, prefix...), i)}, it.At); err != nil {
					return nil, err
				}
			}
			continue
		}
		name := it.Alias
		if id, ok := it.Expr.(*Ident); ok {
			path, _, err := c.resolve(id)
			if err != nil {
				return nil, err
			}
			if name == "" {
				name = id.Path[len(id.Path)-1]
			}
			f := fieldAt(schema, path)
			f.Name = name
			if err := add(f, projCol{in: path}, it.At); err != nil {
				return nil, err
			}
			continue
		}
		if name == "" {
			name = it.Text
		}
		prog, err := compileNode(src, it.Expr, schema, opts)
		if err != nil {
			return nil, err
		}
		if err := add(arrow.Field{Name: name, Type: outputArrow(prog.Type()), Nullable: true}, projCol{prog: prog}, it.At); err != nil {
			return nil, err
		}
	}
	p.schema = arrow.NewSchema(fields, nil)
	return p, nil
}

func fieldAt(s *arrow.Schema, path []int) arrow.Field {
	f := s.Field(path[0])
	for _, j := range path[1:] {
		f = f.Type.(*arrow.StructType).Field(j)
	}
	return f
}

// Schema is the output schema.
func (p *Projection) Schema() *arrow.Schema { return p.schema }

// Eval computes the output batch for rec; passed-through columns are shared, not copied.
func (p *Projection) Eval(ctx context.Context, rec arrow.RecordBatch, pos RowPos) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, len(p.cols))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, pc := range p.cols {
		if pc.prog == nil {
			a, err := (&colNode{path: pc.in}).raw(rec)
			if err != nil {
				return nil, err
			}
			cols[i] = a
			continue
		}
		a, err := pc.prog.Eval(ctx, rec, pos)
		if err != nil {
			return nil, err
		}
		if pc.prog.Type().Kind == KYearMonth {
			a = asMonthInterval(a)
		}
		cols[i] = a
	}
	return array.NewRecordBatch(p.schema, cols, rec.NumRows()), nil
}

// raw reads the column or field at the node's path without converting its type.
func (n *colNode) raw(rec arrow.RecordBatch) (arrow.Array, error) {
	a := rec.Column(n.path[0])
	a.Retain()
	for _, j := range n.path[1:] {
		st := a.(*array.Struct)
		f := st.Field(j)
		if st.NullN() > 0 {
			f = withParentNulls(st, f)
		} else {
			f.Retain()
		}
		a.Release()
		a = f
	}
	return a, nil
}

// outputArrow is the Arrow type of an output column of type t: a year-month interval, held
// as int32 months while it is computed, goes out as Arrow's month_interval (the same
// layout), so a reader sees an interval, not a number.
func outputArrow(t Type) arrow.DataType {
	if t.Kind == KYearMonth {
		return arrow.FixedWidthTypes.MonthInterval
	}
	return t.Arrow()
}

// asMonthInterval retypes an int32 array of months as month_interval over the same buffers;
// it takes over a's reference.
func asMonthInterval(a arrow.Array) arrow.Array {
	d := array.NewData(arrow.FixedWidthTypes.MonthInterval, a.Len(), a.Data().Buffers(), nil, a.NullN(), a.Data().Offset())
	out := array.MakeFromData(d)
	d.Release()
	a.Release()
	return out
}
