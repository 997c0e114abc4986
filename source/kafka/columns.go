package kafka

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// projection is read-kafka's --columns: the output columns, in order, chosen from the full
// schema (schemaFor), like Spark's select("v.*", "v.seq", "partition", "offset"). "key.*" and
// "value.*" flatten a struct key or value (json, avro) into its members; a dot path such as
// "value.seq" or "value.user.id" selects one member, named by its last part, as Spark names
// it. Members are nullable (a null struct — tombstone, undecodable record — makes them null).
//
// The top-level _rescued_data column is always kept, last, so nothing is dropped: when the
// selected members come from a json key or value, its own _rescued_data member (the fields
// that did not fit its schema) joins that column. When only one of key and value contributes
// a member, a row's _rescued_data is that member's object as it is (as Spark's select("v.*")
// would show it), or the top-level object (the record did not decode), or, when a row has
// both, the top-level object with the member's object under "value._rescued_data" (or
// "key._rescued_data"). When both key and value contribute, every member object goes under
// its label, "key._rescued_data" and "value._rescued_data" (inside the top-level object when
// the row has one, else in an object of its own), so a reader can always tell a key field
// from a value field.
//
// Only the json codec adds a rescue member (rescueMember). An avro key or value whose record
// has its own field named _rescued_data cannot be picked apart (dot path or .*): its field
// would be mistaken for, or collide with, the rescued data, so that is a usage error.
type projection struct {
	schema *arrow.Schema
	// outs, one per output column: a full-schema column (child < 0), a member of one, or the
	// merged rescued column.
	outs []projOut
}

type projOut struct {
	col  int   // full-schema column
	path []int // the member of it, a member index per level (none: the column itself)
	// rescued merge: the top-level column (col) and the struct members (parents/children).
	merge       bool
	mergeFrom   [][2]int // struct column, member index
	mergePrefix []string
}

// newProjection compiles --columns (names as above, each once) against the full schema.
// An unknown name, a .* or member path of a non-struct column, or two output columns of one
// name are usage errors.
func newProjection(full *arrow.Schema, cols []string) (*projection, error) {
	p := &projection{}
	var fields []arrow.Field
	seen := map[string]string{}
	add := func(f arrow.Field, from string, o projOut) error {
		if prev, dup := seen[f.Name]; dup {
			return fmt.Errorf("--columns: %s and %s both give a column %q", prev, from, f.Name)
		}
		seen[f.Name] = from
		fields = append(fields, f)
		p.outs = append(p.outs, o)
		return nil
	}
	rescuedCol := -1
	if ix := full.FieldIndices(ColRescued); len(ix) == 1 {
		rescuedCol = ix[0]
	}
	merged := map[int]int{} // struct column → its rescue member
	// keepRescued merges the rescue member of struct column col into the top-level column:
	// selecting some of a value's members must not drop its unparsed fields.
	keepRescued := func(col int) {
		if i, ok := rescueMember(full.Field(col)); ok && rescuedCol >= 0 {
			merged[col] = i
		}
	}
	for _, c := range cols {
		name := strings.TrimSpace(c)
		star := strings.HasSuffix(name, ".*")
		parts := strings.Split(strings.TrimSuffix(name, ".*"), ".")
		base := parts[0]
		ix := full.FieldIndices(base)
		if len(ix) == 1 && ix[0] == rescuedCol && len(parts) == 1 {
			return nil, fmt.Errorf("--columns: %s is always written, as the last column; leave it out of --columns", name)
		}
		if len(ix) != 1 || ix[0] == rescuedCol {
			return nil, fmt.Errorf("--columns: no column %q (columns: key, value, topic, partition, offset, timestamp, timestampType, headers; key.* and value.* flatten a json or avro key or value, value.NAME picks one member)", name)
		}
		f := full.Field(ix[0])
		if star || len(parts) > 1 {
			if err := ownRescued(name, f); err != nil {
				return nil, err
			}
		}
		var path []int
		for k, part := range parts[1:] {
			st, ok := f.Type.(*arrow.StructType)
			if !ok {
				return nil, notStruct(name, parts[:k+1], f.Type)
			}
			i, ok := st.FieldIdx(part)
			if ok && k == 0 && part == ColRescued && rescuedCol >= 0 { // json's rescue member (ownRescued refused an avro field)
				return nil, fmt.Errorf("--columns: %s is always kept, merged into the %s column", name, ColRescued)
			}
			if !ok {
				return nil, fmt.Errorf("--columns: %s: %s has no member %q (members: %s)", name, strings.Join(parts[:k+1], "."), part, memberNames(st))
			}
			path, f = append(path, i), st.Field(i)
		}
		if len(path) > 0 {
			f.Nullable = true
			keepRescued(ix[0])
		}
		if !star {
			if err := add(f, name, projOut{col: ix[0], path: path}); err != nil {
				return nil, err
			}
			continue
		}
		st, ok := f.Type.(*arrow.StructType)
		if !ok {
			return nil, notStruct(name, parts, f.Type)
		}
		if len(path) == 0 {
			keepRescued(ix[0])
		}
		for i, m := range st.Fields() {
			if len(path) == 0 && m.Name == ColRescued && rescuedCol >= 0 {
				continue // json's rescue member, merged into the top-level column
			}
			m.Nullable = true
			if err := add(m, name, projOut{col: ix[0], path: append(slices.Clone(path), i)}); err != nil {
				return nil, err
			}
		}
	}
	if rescuedCol >= 0 {
		merge := projOut{col: rescuedCol, merge: len(merged) > 0}
		for col := range full.NumFields() { // key before value, whatever the --columns order
			if i, ok := merged[col]; ok {
				merge.mergeFrom = append(merge.mergeFrom, [2]int{col, i})
				merge.mergePrefix = append(merge.mergePrefix, full.Field(col).Name+"."+ColRescued)
			}
		}
		if err := add(full.Field(rescuedCol), ColRescued, merge); err != nil {
			return nil, err
		}
	}
	p.schema = arrow.NewSchema(fields, nil)
	return p, nil
}

// apply returns rec's projection (a new batch; rec is not released).
func (p *projection) apply(mem memory.Allocator, rec arrow.RecordBatch) arrow.RecordBatch {
	cols := make([]arrow.Array, len(p.outs))
	for i, o := range p.outs {
		switch {
		case o.merge:
			cols[i] = mergeRescued(mem, rec, o)
		default:
			c := rec.Column(o.col)
			c.Retain()
			for _, k := range o.path {
				m := member(mem, c.(*array.Struct), k)
				c.Release()
				c = m
			}
			cols[i] = c
		}
	}
	out := array.NewRecordBatch(p.schema, cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out
}

// rescueMember returns the index of the rescue member of key or value column f: the
// _rescued_data member the json codec adds (jsonCodec.field), which holds the fields that did
// not fit its schema. An avro column (MetaAvroSchema in its field metadata) has none: a field
// of that name in its record is data.
func rescueMember(f arrow.Field) (int, bool) {
	st, ok := f.Type.(*arrow.StructType)
	if !ok || (f.Name != ColKey && f.Name != ColValue) || f.Metadata.FindKey(MetaAvroSchema) >= 0 {
		return -1, false
	}
	return st.FieldIdx(ColRescued)
}

// ownRescued refuses to pick apart (name: a dot path or .*) a key or value column f whose
// struct has a _rescued_data member that is data, not a rescue member (an avro record field
// of that name): it would be taken for, or collide with, the _rescued_data column --columns
// always keeps.
func ownRescued(name string, f arrow.Field) error {
	st, ok := f.Type.(*arrow.StructType)
	if !ok {
		return nil
	}
	if _, has := st.FieldIdx(ColRescued); !has {
		return nil
	}
	if _, resc := rescueMember(f); resc {
		return nil
	}
	return fmt.Errorf("--columns: %[1]s: the avro %[2]s has its own field %[3]q, which --columns cannot tell apart from the %[3]s column it always keeps; "+
		"output the whole %[2]s (--columns %[2]s,...), or read that field under another name: give --%[2]s-schema with it renamed "+
		"(plain Avro binary does not carry field names; with --schema-registry give the renamed field \"aliases\": [%[3]q])",
		name, f.Name, ColRescued)
}

// notStruct is the error for a .* or member path (name) through path, which is of type t.
func notStruct(name string, path []string, t arrow.DataType) error {
	if len(path) == 1 && (path[0] == ColKey || path[0] == ColValue) {
		return fmt.Errorf("--columns: %s needs --%s-format json or avro (%s is %s)", name, path[0], path[0], t)
	}
	return fmt.Errorf("--columns: %s: %s is %s, not a struct", name, strings.Join(path, "."), t)
}

// memberNames lists the members of st, comma-separated.
func memberNames(st *arrow.StructType) string {
	names := make([]string, st.NumFields())
	for i, f := range st.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// member returns member i of s, null wherever s is null (a builder need not have nulled it).
func member(mem memory.Allocator, s *array.Struct, i int) arrow.Array {
	c := s.Field(i)
	if s.NullN() == 0 {
		c.Retain()
		return c
	}
	d := c.Data()
	n, off := d.Len(), d.Offset()
	bm := memory.NewResizableBuffer(mem)
	bm.Resize(int(bitutil.BytesForBits(int64(off + n))))
	bits := bm.Bytes()
	nulls := 0
	for j := 0; j < n; j++ {
		if s.IsValid(j) && c.IsValid(j) {
			bitutil.SetBit(bits, off+j)
		} else {
			bitutil.ClearBit(bits, off+j)
			nulls++
		}
	}
	bufs := append([]*memory.Buffer{bm}, d.Buffers()[1:]...)
	nd := array.NewData(d.DataType(), n, bufs, d.Children(), nulls, off)
	bm.Release()
	defer nd.Release()
	return array.MakeFromData(nd)
}

// mergeRescued builds the single _rescued_data column of a flattened projection (see
// projection): labelled when both key and value contribute a member.
func mergeRescued(mem memory.Allocator, rec arrow.RecordBatch, o projOut) arrow.Array {
	top := rec.Column(o.col).(*array.String)
	parts := make([]*array.String, len(o.mergeFrom))
	for k, mf := range o.mergeFrom {
		parts[k] = member(mem, rec.Column(mf[0]).(*array.Struct), mf[1]).(*array.String)
		defer parts[k].Release()
	}
	labelAll := len(parts) > 1
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Reserve(top.Len())
	var buf []byte
	for j := 0; j < top.Len(); j++ {
		buf = buf[:0]
		if top.IsValid(j) {
			buf = append(buf, top.Value(j)...)
		}
		for k, pa := range parts {
			if !pa.IsValid(j) {
				continue
			}
			if len(buf) == 0 && !labelAll {
				buf = append(buf, pa.Value(j)...)
				continue
			}
			// Nest the member's object under its label, in the object so far or a new one.
			if len(buf) == 0 {
				buf = append(buf, '{', '"')
			} else {
				buf = append(buf[:len(buf)-1], ',', '"')
			}
			buf = append(buf, o.mergePrefix[k]...)
			buf = append(buf, '"', ':')
			buf = append(buf, pa.Value(j)...)
			buf = append(buf, '}')
		}
		if len(buf) == 0 && !top.IsValid(j) {
			b.AppendNull()
		} else {
			b.BinaryBuilder.Append(buf)
		}
	}
	return b.NewArray()
}
