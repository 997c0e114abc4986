// Package int96 decodes Parquet INT96 timestamps straight to microseconds since the epoch, for
// every reader of Parquet files (read-delta's scan, read-files).
//
// Spark writes TIMESTAMP columns as INT96 (a Julian day and the nanoseconds of that day) when
// spark.sql.parquet.outputTimestampType=INT96, the default before Spark 3.x and still common,
// also inside structs, lists and maps; pyarrow and Hive/Impala write them too. arrow-go's
// pqarrow decodes INT96 to nanoseconds only, failing for instants outside 1677-09-21 …
// 2262-04-11 (0001-01-01 and 9999-12-31 are ordinary Spark values), and has no option to
// coerce INT96 to another unit. Two ways around it, neither of which can fail on a value:
//   - a top-level INT96 column read apart with the Parquet column chunk reader ([Column]);
//   - [MicrosFields] tells pqarrow that an INT96 leaf's type is timestamp[µs]: pqarrow then
//     hands the leaf's values over undecoded (its zero-copy path for µs timestamps keeps the
//     12-byte INT96 values in the data buffer), and [DecodeFields] decodes them in place to µs
//     in each batch before anything reads it. This works for leaves inside structs, lists and
//     maps and for top-level leaves alike.
//
// [CheckNested] remains for a nested column whose Arrow type MicrosFields cannot rewrite (an
// extension type from an ARROW:schema): pqarrow decodes it to ns, range-checked before the
// file's first row.
//
// Decoding follows Spark's reader (DateTimeUtils.fromJulianDay). Calendar rebasing of files
// Spark wrote in LEGACY mode is the caller's: a [Rebase] hook, applied to every decoded value.
package int96

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// JulianDayOfEpoch is the Julian day number of 1970-01-01.
const JulianDayOfEpoch = 2_440_588

// Micros is the instant of an INT96 timestamp in µs since the epoch, computed as Spark's
// reader does (DateTimeUtils.fromJulianDay): (day − 2440588) × 86400·10⁶ + nanos / 1000, in
// wrapping 64-bit arithmetic; for a valid value (nanos within the day) the division floors.
func Micros(v parquet.Int96) int64 {
	nanos := int64(binary.LittleEndian.Uint64(v[:8]))
	day := int64(int32(binary.LittleEndian.Uint32(v[8:])))
	return (day-JulianDayOfEpoch)*86_400_000_000 + nanos/1000
}

// Type is the Arrow type of a decoded INT96 column: timestamp[µs, UTC], Spark's TIMESTAMP (an
// instant).
var Type = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// Rebase, when not nil, maps each decoded instant (µs since the epoch) to the one the caller
// reads it as (e.g. a Julian-calendar reading to the proleptic Gregorian instant); nil keeps
// the values.
type Rebase func(us int64) int64

// IsLeaf reports whether f is an INT96 leaf column of file pf.
func IsLeaf(pf *file.Reader, f *pqarrow.SchemaField) bool {
	return f.IsLeaf() && pf.MetaData().Schema.Column(f.ColIndex).PhysicalType() == parquet.Types.Int96
}

// Column reads one top-level INT96 column over a list of row groups, in runs of rows aligned
// with the record reader's batches of the file's other columns. Close releases it.
type Column struct {
	pf     *file.Reader
	leaf   int
	maxDef int16  // 0 for a required column, 1 for an optional one
	rebase Rebase // nil: none
	rgs    []int  // row groups still to open
	cr     *file.Int96ColumnChunkReader
	vals   []parquet.Int96
	defs   []int16
}

// NewColumn reads the INT96 leaf column leaf of pf over rowGroups, in that order, applying
// rebase (nil: none) to each value.
func NewColumn(pf *file.Reader, leaf int, rowGroups []int, rebase Rebase) *Column {
	return &Column{pf: pf, leaf: leaf, maxDef: pf.MetaData().Schema.Column(leaf).MaxDefinitionLevel(), rgs: rowGroups, rebase: rebase}
}

// Next decodes the next n rows into timestamp[µs, UTC] data (a new reference). Errors are
// the Parquet reader's (a corrupt or truncated column chunk), never a value's.
func (c *Column) Next(mem memory.Allocator, n int) (arrow.ArrayData, error) {
	vals := memory.NewResizableBuffer(mem)
	vals.Resize(arrow.Int64Traits.BytesRequired(n))
	out := arrow.Int64Traits.CastFromBytes(vals.Bytes())
	var bm *memory.Buffer
	var valid []byte
	nulls := 0
	if c.maxDef > 0 {
		bm = memory.NewResizableBuffer(mem)
		bm.Resize(int(bitutil.BytesForBits(int64(n))))
		valid = bm.Bytes()
		clear(valid)
	}
	release := func() {
		vals.Release()
		if bm != nil {
			bm.Release()
		}
	}
	if cap(c.vals) < n {
		c.vals = make([]parquet.Int96, n)
		c.defs = make([]int16, n)
	}
	for done := 0; done < n; {
		if c.cr == nil || !c.cr.HasNext() {
			if len(c.rgs) == 0 {
				release()
				return nil, fmt.Errorf("INT96 column %s: %d rows fewer than the row groups hold", c.name(), n-done)
			}
			c.Close()
			cr, err := chunkReader(c.pf, c.rgs[0], c.leaf)
			if err != nil {
				release()
				return nil, err
			}
			c.rgs = c.rgs[1:]
			c.cr = cr
			continue
		}
		var defs []int16
		if c.maxDef > 0 {
			defs = c.defs[:n-done]
		}
		levels, _, err := c.cr.ReadBatch(int64(n-done), c.vals[:n-done], defs, nil)
		if err != nil {
			release()
			return nil, fmt.Errorf("INT96 column %s: %w", c.name(), err)
		}
		j := 0
		for i := 0; i < int(levels); i++ {
			if c.maxDef > 0 && defs[i] < c.maxDef {
				nulls++
				continue
			}
			us := Micros(c.vals[j])
			if c.rebase != nil {
				us = c.rebase(us)
			}
			out[done+i] = us
			j++
			if valid != nil {
				bitutil.SetBit(valid, done+i)
			}
		}
		done += int(levels)
	}
	if nulls == 0 && bm != nil {
		bm.Release()
		bm = nil
	}
	d := array.NewData(Type, n, []*memory.Buffer{bm, vals}, nil, nulls, 0)
	release()
	return d, nil
}

// Close releases the column chunk reader of the current row group.
func (c *Column) Close() {
	if c.cr != nil {
		c.cr.Close()
		c.cr = nil
	}
}

// chunkReader opens the INT96 column chunk of leaf in row group rg of pf.
func chunkReader(pf *file.Reader, rg, leaf int) (*file.Int96ColumnChunkReader, error) {
	cc, err := pf.RowGroup(rg).Column(leaf)
	if err != nil {
		return nil, err
	}
	cr, ok := cc.(*file.Int96ColumnChunkReader)
	if !ok {
		cc.Close()
		return nil, fmt.Errorf("INT96 column %s: the column reader is a %T", pf.MetaData().Schema.Column(leaf).Path(), cc)
	}
	return cr, nil
}

func (c *Column) name() string { return c.pf.MetaData().Schema.Column(c.leaf).Path() }

// CheckNested reads the INT96 leaves (values only) in rowGroups of pf and fails when one lies
// outside the nanosecond range pqarrow decodes (years 1677 to 2262), so a file that would fail
// mid-way fails before its first row is emitted.
func CheckNested(pf *file.Reader, leaves []int, rowGroups []int) error {
	const batch = 4096
	vals := make([]parquet.Int96, batch)
	defs := make([]int16, batch)
	reps := make([]int16, batch)
	for _, leaf := range leaves {
		col := pf.MetaData().Schema.Column(leaf)
		for _, rg := range rowGroups {
			cr, err := chunkReader(pf, rg, leaf)
			if err != nil {
				return err
			}
			err = checkChunk(cr, col, vals, defs, reps)
			cr.Close()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func checkChunk(cr *file.Int96ColumnChunkReader, col *schema.Column, vals []parquet.Int96, defs, reps []int16) error {
	for cr.HasNext() {
		_, n, err := cr.ReadBatch(int64(len(vals)), vals, defs, reps)
		if err != nil {
			return fmt.Errorf("INT96 column %s: %w", col.Path(), err)
		}
		for _, v := range vals[:n] {
			if _, err := v.ToTimestamp(); err != nil {
				return fmt.Errorf("column %s: INT96 timestamp %s inside a %s: INT96 under an Arrow extension type is read over years 1677 to 2262 only: %w",
					col.Path(), time.UnixMicro(Micros(v)).UTC().Format("2006-01-02 15:04:05.999999"), nestedKind(col), err)
			}
		}
	}
	return nil
}

// nestedKind names what holds an INT96 leaf, for the error of CheckNested.
func nestedKind(col *schema.Column) string {
	if col.MaxRepetitionLevel() > 0 {
		return "list or map"
	}
	return "struct"
}

// MicrosFields makes pqarrow read each INT96 leaf of the top-level field f of pf (f itself, or
// leaves inside its structs, lists and maps) as timestamp[µs, UTC] (see the package comment),
// rewriting the Arrow types of f and its descendants in the manifest; the field's batches must
// then go through [DecodeFields] before anything reads them. It reports false, changing
// nothing, when f holds no INT96 leaf or a type on the way to one is not a struct, list or map.
func MicrosFields(pf *file.Reader, f *pqarrow.SchemaField) bool {
	types := map[*pqarrow.SchemaField]arrow.DataType{}
	if ok, err := microsType(pf, f, types); !ok || err != nil {
		return false
	}
	for sf, t := range types {
		nf := *sf.Field
		nf.Type = t
		sf.Field = &nf
	}
	return true
}

// microsType records in types the Arrow type of sf and of each descendant with INT96 leaves
// read as µs, and reports whether sf holds an INT96 leaf.
func microsType(pf *file.Reader, sf *pqarrow.SchemaField, types map[*pqarrow.SchemaField]arrow.DataType) (bool, error) {
	if sf.IsLeaf() {
		if !IsLeaf(pf, sf) {
			return false, nil
		}
		types[sf] = Type
		return true, nil
	}
	found := false
	kids := make([]arrow.Field, len(sf.Children))
	for i := range sf.Children {
		c := &sf.Children[i]
		ok, err := microsType(pf, c, types)
		if err != nil {
			return false, err
		}
		found = found || ok
		kids[i] = *c.Field
		if ok {
			kids[i].Type = types[c]
		}
	}
	if !found {
		return false, nil
	}
	switch t := sf.Field.Type.(type) {
	case *arrow.StructType:
		if t.NumFields() != len(kids) {
			return false, fmt.Errorf("struct %s: %d fields, %d columns", sf.Field.Name, t.NumFields(), len(kids))
		}
		fields := t.Fields()
		for i := range fields {
			fields[i].Type = kids[i].Type
		}
		types[sf] = arrow.StructOf(fields...)
	case *arrow.MapType:
		entries, ok := types[&sf.Children[0]].(*arrow.StructType)
		if !ok || entries.NumFields() != 2 {
			return false, fmt.Errorf("map %s: entries are not a key and a value", sf.Field.Name)
		}
		m := arrow.MapOfFields(entries.Field(0), entries.Field(1))
		m.KeysSorted = t.KeysSorted
		types[sf] = m
	case *arrow.ListType:
		types[sf] = arrow.ListOfField(kids[0])
	case *arrow.LargeListType:
		types[sf] = arrow.LargeListOfField(kids[0])
	case *arrow.FixedSizeListType:
		types[sf] = arrow.FixedSizeListOfField(t.Len(), kids[0])
	default:
		return false, fmt.Errorf("%s: INT96 inside a %s", sf.Field.Name, t)
	}
	return true, nil
}

// DecodeFields decodes in place, to µs since the epoch, the INT96 leaves of d, a batch of the
// field sf that MicrosFields rewrote: each such leaf's data buffer holds the raw 12-byte
// values, overwritten front to back by 8-byte ones; rebase (nil: none) is applied to each. It
// fails only when a buffer is not what pqarrow is known to hand over (an arrow-go change),
// never on a value.
func DecodeFields(pf *file.Reader, sf *pqarrow.SchemaField, d arrow.ArrayData, rebase Rebase) error {
	if sf.IsLeaf() {
		if !IsLeaf(pf, sf) {
			return nil
		}
		n := d.Offset() + d.Len()
		buf := d.Buffers()[1]
		if buf == nil && n == 0 {
			return nil
		}
		if buf == nil || buf.Len() < 12*n {
			return fmt.Errorf("INT96 column %s: the reader's buffer holds no %d INT96 values", pf.MetaData().Schema.Column(sf.ColIndex).Path(), n)
		}
		b := buf.Bytes()
		out := arrow.Int64Traits.CastFromBytes(b[:8*n])
		for i := range n {
			// out[i] ends at byte 8i+8 ≤ 12i+12: the values not yet read are intact.
			us := Micros(parquet.Int96(b[12*i : 12*i+12]))
			if rebase != nil {
				us = rebase(us)
			}
			out[i] = us
		}
		return nil
	}
	kids := d.Children()
	if len(kids) != len(sf.Children) {
		return fmt.Errorf("column %s: %d child arrays for %d fields", sf.Field.Name, len(kids), len(sf.Children))
	}
	for i := range sf.Children {
		if err := DecodeFields(pf, &sf.Children[i], kids[i], rebase); err != nil {
			return err
		}
	}
	return nil
}

// Fields are the columns of a pqarrow record reader's batches whose INT96 leaves MicrosFields
// rewrote ([RewriteFields]); [Fields.Decode] decodes them in each batch.
type Fields struct {
	pf     *file.Reader
	cols   []int                  // column in the batches
	fields []*pqarrow.SchemaField // its manifest field
}

// RewriteFields applies MicrosFields to every top-level field of fr's manifest (fr reads pf)
// that read reports (nil: every field), before the record reader is made. The result names
// the rewritten ones by their column in the batches of a record reader over exactly the
// fields read (pqarrow returns them in file order).
func RewriteFields(pf *file.Reader, fr *pqarrow.FileReader, read func(name string) bool) Fields {
	out := Fields{pf: pf}
	col := 0
	for i := range fr.Manifest.Fields {
		f := &fr.Manifest.Fields[i]
		if read != nil && !read(f.Field.Name) {
			continue
		}
		if MicrosFields(pf, f) {
			out.cols = append(out.cols, col)
			out.fields = append(out.fields, f)
		}
		col++
	}
	return out
}

// Decode decodes in place the INT96 leaves of rec, a batch of the record reader, applying
// rebase (nil: none); see [DecodeFields].
func (f Fields) Decode(rec arrow.RecordBatch, rebase Rebase) error {
	for k, c := range f.cols {
		if err := DecodeFields(f.pf, f.fields[k], rec.Column(c).Data(), rebase); err != nil {
			return err
		}
	}
	return nil
}
