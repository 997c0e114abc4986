package delta

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/stage"
)

// Augmenter adds columns to every batch a sink writes: constant columns (--with) and
// top-level copies of nested partition fields (see promoted), after the input's columns; it
// may leave out one input column. Used by StreamWriter (write-delta) and by backfill.
type Augmenter struct {
	// Schema is the schema of the batches Augment returns. Nil: the input batch's fields
	// without the dropped one, with a nullable field per constant (named and typed as the
	// constant) appended.
	Schema *arrow.Schema
	// Consts are the constant columns, appended in order; Release releases them.
	Consts []*codec.Constant
	// Drop, when Dropping, is the index of an input column that is left out.
	Drop     int
	Dropping bool
	promoted []promoted // nested --partition-by fields copied into top-level columns
}

// Augment returns rec (borrowed) with the columns added (a new reference; rec itself,
// retained, when there is nothing to add or drop). Arrays are allocated with mem.
func (a *Augmenter) Augment(mem memory.Allocator, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(a.Consts) == 0 && len(a.promoted) == 0 && !a.Dropping {
		rec.Retain()
		return rec, nil
	}
	n := int(rec.NumRows())
	cols := slices.Clone(rec.Columns())
	var fields []arrow.Field
	if a.Schema == nil {
		fields = slices.Clone(rec.Schema().Fields())
	}
	if i := a.Drop; a.Dropping {
		cols = slices.Delete(cols, i, i+1)
		if fields != nil {
			fields = slices.Delete(fields, i, i+1)
		}
	}
	var extra []arrow.Array
	defer func() {
		for _, x := range extra {
			x.Release()
		}
	}()
	for _, c := range a.Consts {
		x, err := c.Slice(mem, n)
		if err != nil {
			return nil, err
		}
		extra = append(extra, x)
		cols = append(cols, x)
		if fields != nil {
			fields = append(fields, arrow.Field{Name: c.Name, Type: c.Type, Nullable: true})
		}
	}
	for _, p := range a.promoted {
		x := promotedColumn(mem, p.path, rec)
		extra = append(extra, x)
		cols = append(cols, x)
	}
	sc := a.Schema
	if sc == nil {
		sc = arrow.NewSchema(fields, nil)
	}
	return array.NewRecordBatch(sc, cols, int64(n)), nil
}

// Release releases the constants.
func (a *Augmenter) Release() {
	for _, c := range a.Consts {
		c.Release()
	}
	a.Consts = nil
}

// Nested partition columns. Delta partition columns are top-level columns (PROTOCOL.md
// "Partition Columns"), so `--partition-by value.region` promotes the struct field to a
// top-level column of its own, which the table is partitioned by; the struct keeps its field.
// The new column is named after the leaf ("region"); when that name is taken (case-insensitive)
// by an input column, a --with column or another promoted field, the dot path with '_' for '.'
// ("value_region") — the naming keyby and window use for key columns. A row whose struct (or
// an enclosing one) is null has a null partition value. The table remembers the promotion in
// the property streamkit.partitionColumn.<column> = <dot path>, so later runs without
// --partition-by fill the column the same way.

// PromotedProperty prefixes the table property recording a promoted partition column.
const PromotedProperty = "streamkit.partitionColumn."

// promoted is one nested --partition-by field copied into a top-level column.
type promoted struct {
	path codec.Path
	name string
}

// resolvePartitionBy maps the --partition-by entries (or, without any, the promoted columns
// an existing table records) onto top-level column names of the written schema (fields: input
// + --with columns), promoting dot paths into struct fields.
func (w *StreamWriter) resolvePartitionBy(in *arrow.Schema, fields []arrow.Field, conf map[string]string) ([]string, error) {
	list := w.cfg.PartitionBy
	if len(list) == 0 {
		keys := slices.Sorted(maps.Keys(conf))
		for _, k := range keys {
			path := conf[k]
			col, ok := strings.CutPrefix(k, PromotedProperty)
			if !ok || in.FieldIndices(col) != nil {
				continue
			}
			if _, err := codec.ResolvePath(in, path); err != nil {
				return nil, fmt.Errorf("write-delta: table %s has partition column %s, filled from the nested field %s (table property %s), which the input lacks: %w",
					w.cfg.Table, col, path, k, err)
			}
			list = append(list, path)
		}
		if len(list) == 0 {
			return nil, nil
		}
	}
	taken := func(name string) bool {
		for _, f := range fields {
			if strings.EqualFold(f.Name, name) {
				return true
			}
		}
		for _, p := range w.aug.promoted {
			if strings.EqualFold(p.name, name) {
				return true
			}
		}
		return false
	}
	var out []string
	for _, pb := range list {
		if slices.ContainsFunc(fields, func(f arrow.Field) bool { return f.Name == pb }) || !strings.Contains(pb, ".") {
			out = append(out, pb) // a top-level column (or none: delta.NewTableMetadata names it)
			continue
		}
		p, err := codec.ResolvePath(in, pb)
		if errors.Is(err, codec.ErrPath) {
			return nil, stage.Usagef("write-delta: --partition-by %s: %v", pb, err)
		}
		if err != nil {
			return nil, err
		}
		name := p.Leaf()
		if taken(name) {
			name = strings.ReplaceAll(pb, ".", "_")
			if taken(name) {
				return nil, stage.Usagef("write-delta: --partition-by %s: the nested field becomes a top-level partition column, but both %s and %s are taken by other columns; rename one of them",
					pb, p.Leaf(), name)
			}
		}
		w.aug.promoted = append(w.aug.promoted, promoted{path: p, name: name})
		out = append(out, name)
	}
	for _, p := range w.aug.promoted {
		w.env.Log.Info("partitioning by a nested field: it is copied into a top-level column", "field", p.path.Name, "column", p.name)
	}
	if len(w.cfg.PartitionBy) == 0 {
		return nil, nil // the table's partitioning; the promoted columns are filled
	}
	return out, nil
}

// promotedProperties are the table properties recording the promoted columns.
func (w *StreamWriter) promotedProperties() map[string]string {
	m := map[string]string{}
	for _, p := range w.aug.promoted {
		m[PromotedProperty+p.name] = p.path.Name
	}
	return m
}

// promotedFields are the top-level fields of the promoted partition columns.
func (w *StreamWriter) promotedFields() []arrow.Field {
	var out []arrow.Field
	for _, p := range w.aug.promoted {
		out = append(out, arrow.Field{Name: p.name, Type: p.path.Field.Type, Nullable: true})
	}
	return out
}

// promotedColumn returns the values of p in rec as a new array, null where the field or an
// enclosing struct is null (Arrow does not propagate a struct's nulls into its children).
func promotedColumn(mem memory.Allocator, p codec.Path, rec arrow.RecordBatch) arrow.Array {
	c := p.Column(rec)
	leaf := c.Arr
	n := leaf.Len()
	if !c.HasNulls() || leaf.NullN() == n {
		leaf.Retain()
		return leaf
	}
	d := leaf.Data()
	off := d.Offset()
	bm := memory.NewResizableBuffer(mem)
	bm.Resize(int(bitutil.BytesForBits(int64(off + n))))
	bits := bm.Bytes()
	for i := range bits {
		bits[i] = 0
	}
	nulls := 0
	for i := 0; i < n; i++ {
		if c.IsNull(i) {
			nulls++
		} else {
			bitutil.SetBit(bits, off+i)
		}
	}
	bufs := append([]*memory.Buffer{bm}, d.Buffers()[1:]...)
	var nd arrow.ArrayData
	if dict := d.Dictionary(); dict != nil {
		nd = array.NewDataWithDictionary(d.DataType(), n, bufs, nulls, off, dict.(*array.Data))
	} else {
		nd = array.NewData(d.DataType(), n, bufs, d.Children(), nulls, off)
	}
	bm.Release()
	defer nd.Release()
	return array.MakeFromData(nd)
}

// describePromoted is the log/usage description of the promoted columns ("value.region →
// region").
func (w *StreamWriter) describePromoted() string {
	var parts []string
	for _, p := range w.aug.promoted {
		parts = append(parts, fmt.Sprintf("%s → %s", p.path.Name, p.name))
	}
	return strings.Join(parts, ", ")
}
