package files

import (
	"context"

	"fmt"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec/formats"
	"github.com/streamkit/streamkit/codec/rescue"
	"github.com/streamkit/streamkit/codec/textout"
)

// MetadataColumn is the name of the --with-metadata struct column.
const MetadataColumn = "_metadata"

// MetadataType is the type of the _metadata column (Spark's hidden _metadata column, plus the
// row's position): the file's absolute path and base name, its size in bytes and modification
// time (UTC) as listed, the row's 0-based index among the file's rows, and for text formats
// the 1-based line where the record starts and its byte offset in the decompressed file
// (null for binary formats). Size and time are null for stdin.
var MetadataType = arrow.StructOf(
	arrow.Field{Name: "file_path", Type: arrow.BinaryTypes.String},
	arrow.Field{Name: "file_name", Type: arrow.BinaryTypes.String},
	arrow.Field{Name: "file_size", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	arrow.Field{Name: "file_modification_time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	arrow.Field{Name: "row_index", Type: arrow.PrimitiveTypes.Int64},
	arrow.Field{Name: "line", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	arrow.Field{Name: "byte_offset", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
)

// converter turns the batches of one file into batches of the stream schema.
type converter struct {
	mem   memory.Allocator
	dec   *arrow.Schema // data columns + _rescued_data
	out   *arrow.Schema // dec + _metadata when withMeta
	meta  bool
	entry *Entry
	text  bool // the decoder produced dec's columns already
	// binary formats: for each data column of dec, the source column (-1: missing)
	src      []int
	extras   []int // source columns not in the schema (rescued)
	identity bool  // the source columns are dec's data columns, same order and types
	names    []string
	// onNotUTF8 counts a row whose string values are not valid UTF-8 (nil: not counted).
	onNotUTF8 func()
}

// newConverter prepares the conversion of a file with schema fsch into the stream schema dec
// (out with _metadata). With strict, a column the file has whose type cannot be converted to
// dec's at all is a *SchemaMismatchError (see Config.RescueSchemaMismatch). onNotUTF8 is called
// for every row of a binary file whose string column holds a value that is not valid UTF-8.
func newConverter(mem memory.Allocator, dec, out *arrow.Schema, meta bool, e *Entry, text bool, fsch *arrow.Schema, strict bool, onNotUTF8 func()) (*converter, error) {
	c := &converter{mem: mem, dec: dec, out: out, meta: meta, entry: e, text: text, onNotUTF8: onNotUTF8}
	nData := dec.NumFields() - 1
	if text {
		if fsch.NumFields() != dec.NumFields() {
			return nil, fmt.Errorf("decoder schema %s does not match the stream schema %s", fsch, dec)
		}
		for i := 0; i < dec.NumFields(); i++ {
			if fsch.Field(i).Name != dec.Field(i).Name || !arrow.TypeEqual(fsch.Field(i).Type, dec.Field(i).Type) {
				return nil, fmt.Errorf("decoder column %s %s differs from the stream schema's %s %s", fsch.Field(i).Name, fsch.Field(i).Type, dec.Field(i).Name, dec.Field(i).Type)
			}
		}
		return c, nil
	}
	used := make([]bool, fsch.NumFields())
	c.identity = fsch.NumFields() == nData
	for i := 0; i < nData; i++ {
		f := dec.Field(i)
		j := -1
		if idx := fsch.FieldIndices(f.Name); len(idx) > 0 {
			j = idx[0]
			used[j] = true
		}
		if j < 0 && !f.Nullable {
			return nil, fmt.Errorf("column %s is NOT NULL in the schema but the file has no such column", f.Name)
		}
		c.src = append(c.src, j)
		if j != i || !arrow.TypeEqual(fsch.Field(j).Type, f.Type) {
			c.identity = false
		}
		if j >= 0 && strict && !arrow.TypeEqual(fsch.Field(j).Type, f.Type) {
			if err := castable(mem, fsch.Field(j).Type, f.Type); err != nil {
				return nil, &SchemaMismatchError{Column: f.Name, FileType: fsch.Field(j).Type, Type: f.Type, Err: err}
			}
		}
	}
	for j, u := range used {
		if !u && fsch.Field(j).Name != rescue.Column {
			c.extras = append(c.extras, j)
		}
	}
	c.names = make([]string, fsch.NumFields())
	for j, f := range fsch.Fields() {
		c.names[j] = f.Name
	}
	return c, nil
}

// SchemaMismatchError reports a file column whose type no cast converts to the stream
// schema's (e.g. a struct read as a number, a string as a struct): every value of it would be
// rescued, so it is a schema configuration error rather than bad values. The caller adds the
// file's path.
type SchemaMismatchError struct {
	Column         string
	FileType, Type arrow.DataType // the file's type and the stream schema's
	Err            error          // why no cast exists
}

func (e *SchemaMismatchError) Error() string {
	return fmt.Sprintf("column %s is %s in the file, which cannot be converted to the schema's %s (%v): "+
		"the file's schema does not resolve to the stream schema (--schema, or the one this checkpoint recorded); "+
		"fix --schema, or --on-schema-mismatch rescue reads on with the column null and its values in %s",
		e.Column, e.FileType, e.Type, e.Err, rescue.Column)
}

// castable reports whether arrow compute casts from to to (safely) at all, whatever the values:
// it casts an empty array.
func castable(mem memory.Allocator, from, to arrow.DataType) error {
	a := array.MakeArrayOfNull(mem, from, 0)
	defer a.Release()
	out, err := compute.CastArray(compute.WithAllocator(context.Background(), mem), a, compute.SafeCastOptions(to))
	if err != nil {
		return err
	}
	out.Release()
	return nil
}

// convert returns b's rows in the stream schema (the caller releases it) and releases b.
func (c *converter) convert(b formats.Batch) (arrow.RecordBatch, error) {
	rec := b.Record
	defer rec.Release()
	n := rec.NumRows()
	cols := make([]arrow.Array, 0, c.out.NumFields())
	var owned []arrow.Array // arrays created here, released after the record holds them
	defer func() {
		for _, a := range owned {
			a.Release()
		}
	}()
	if c.text {
		cols = append(cols, rec.Columns()...)
	} else {
		var rescued []arrow.Array // columns whose values go to _rescued_data
		var rescuedNames []string
		for i, j := range c.src {
			f := c.dec.Field(i)
			switch {
			case j < 0:
				a := array.MakeArrayOfNull(c.mem, f.Type, int(n))
				owned = append(owned, a)
				cols = append(cols, a)
			case arrow.TypeEqual(rec.Column(j).DataType(), f.Type):
				cols = append(cols, rec.Column(j))
			default:
				ctx := compute.WithAllocator(context.Background(), c.mem)
				a, err := compute.CastArray(ctx, rec.Column(j), compute.SafeCastOptions(f.Type))
				if err != nil {
					// The values do not fit the column's type: null, and kept in _rescued_data.
					a = array.MakeArrayOfNull(c.mem, f.Type, int(n))
					rescued = append(rescued, rec.Column(j))
					rescuedNames = append(rescuedNames, c.names[j])
				}
				owned = append(owned, a)
				cols = append(cols, a)
			}
		}
		for _, j := range c.extras {
			rescued = append(rescued, rec.Column(j))
			rescuedNames = append(rescuedNames, c.names[j])
		}
		// String values that are not valid UTF-8 (a Parquet or Arrow writer that did not check):
		// null in their column, their bytes rescued (base64).
		var bad []bool
		for i, a := range cols {
			s, ok := a.(*array.String)
			if !ok || utf8.Valid(s.ValueBytes()) {
				continue
			}
			kept, only := splitNotUTF8(c.mem, s, &bad)
			owned = append(owned, kept, only)
			cols[i] = kept
			rescued = append(rescued, only)
			rescuedNames = append(rescuedNames, c.dec.Field(i).Name)
		}
		for _, b := range bad {
			if b && c.onNotUTF8 != nil {
				c.onNotUTF8()
			}
		}
		a, err := c.rescue(rescued, rescuedNames, int(n))
		if err != nil {
			return nil, err
		}
		owned = append(owned, a)
		cols = append(cols, a)
	}
	if c.meta {
		m := c.metadata(b, int(n))
		owned = append(owned, m)
		cols = append(cols, m)
	}
	return array.NewRecordBatch(c.out, cols, n), nil
}

// splitNotUTF8 splits s into kept (s with its values that are not valid UTF-8 made null) and
// only (those values, null elsewhere), marking their rows in *bad.
func splitNotUTF8(mem memory.Allocator, s *array.String, bad *[]bool) (kept, only arrow.Array) {
	if *bad == nil {
		*bad = make([]bool, s.Len())
	}
	kb, ob := array.NewStringBuilder(mem), array.NewStringBuilder(mem)
	defer kb.Release()
	defer ob.Release()
	for r := 0; r < s.Len(); r++ {
		switch v := s.Value(r); {
		case s.IsNull(r):
			kb.AppendNull()
			ob.AppendNull()
		case utf8.ValidString(v):
			kb.Append(v)
			ob.AppendNull()
		default:
			(*bad)[r] = true
			kb.AppendNull()
			ob.Append(v)
		}
	}
	return kb.NewArray(), ob.NewArray()
}

// rescue renders the values of cols as the _rescued_data JSON of each row (null when a row
// has no non-null value among them).
func (c *converter) rescue(cols []arrow.Array, names []string, n int) (arrow.Array, error) {
	if len(cols) == 0 {
		return array.MakeArrayOfNull(c.mem, arrow.BinaryTypes.String, n), nil
	}
	b := array.NewStringBuilder(c.mem)
	defer b.Release()
	b.Reserve(n)
	var rb rescue.Builder
	var buf []byte
	for r := 0; r < n; r++ {
		rb.Reset()
		for k, a := range cols {
			if a.IsNull(r) {
				continue
			}
			if s, ok := a.(*array.String); ok && !utf8.ValidString(s.Value(r)) {
				rb.AddString(names[k], []byte(s.Value(r))) // kept base64 (codec/rescue)
				continue
			}
			buf = textout.AppendJSON(buf[:0], a, r)
			rb.AddRaw(names[k], buf)
		}
		if out := rb.Finish(c.entry.Path); out != nil {
			b.BinaryBuilder.Append(out)
		} else {
			b.AppendNull()
		}
	}
	return b.NewArray(), nil
}

// metadata builds the _metadata column of a batch.
func (c *converter) metadata(b formats.Batch, n int) arrow.Array {
	sb := array.NewStructBuilder(c.mem, MetadataType)
	defer sb.Release()
	sb.Reserve(n)
	path := sb.FieldBuilder(0).(*array.StringBuilder)
	name := sb.FieldBuilder(1).(*array.StringBuilder)
	size := sb.FieldBuilder(2).(*array.Int64Builder)
	mtime := sb.FieldBuilder(3).(*array.TimestampBuilder)
	row := sb.FieldBuilder(4).(*array.Int64Builder)
	line := sb.FieldBuilder(5).(*array.Int64Builder)
	off := sb.FieldBuilder(6).(*array.Int64Builder)
	for _, bb := range []array.Builder{path, name, size, mtime, row, line, off} {
		bb.Reserve(n)
	}
	e := c.entry
	base := filepath.Base(e.Path)
	ts := arrow.Timestamp(time.Unix(0, e.MTime).UnixMicro())
	size0 := e.Size
	for i := 0; i < n; i++ {
		sb.Append(true)
		path.Append(e.Path)
		name.Append(base)
		if size0 >= 0 {
			size.UnsafeAppend(size0)
			mtime.UnsafeAppend(ts)
		} else { // stdin
			size.AppendNull()
			mtime.AppendNull()
		}
		row.UnsafeAppend(b.FirstRow + int64(i))
		if i < len(b.Lines) {
			line.UnsafeAppend(b.Lines[i])
			off.UnsafeAppend(b.Offsets[i])
		} else {
			line.AppendNull()
			off.AppendNull()
		}
	}
	return sb.NewArray()
}
