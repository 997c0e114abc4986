package delta

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
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Spark writes TIMESTAMP columns as INT96 (a Julian day and the nanoseconds of that day) when
// spark.sql.parquet.outputTimestampType=INT96, the default before Spark 3.x and still common,
// also inside structs, lists and maps. arrow-go's pqarrow decodes INT96 to nanoseconds only,
// failing for instants outside 1677-09-21 … 2262-04-11 (0001-01-01 and 9999-12-31 are ordinary
// Spark values), and has no option to coerce INT96 to another unit. So the scan reads a
// top-level INT96 column itself, with the Parquet column chunk reader, straight to
// microseconds (int96Column). For an INT96 leaf inside a nested column it tells pqarrow the
// leaf's type is timestamp[µs] (int96NestedMicros): pqarrow then hands the leaf's values over
// undecoded (its zero-copy path for µs timestamps keeps the 12-byte INT96 values in the data
// buffer), and the scan decodes them in place to µs in each batch before anything reads it
// (int96DecodeNested). Neither can fail on a value. checkNestedInt96 remains for a nested
// column whose Arrow type int96NestedMicros cannot rewrite (an extension type from an
// ARROW:schema; Delta writers produce none): pqarrow decodes it to ns, range-checked before
// the file's first row.

// julianDayOfEpoch is the Julian day number of 1970-01-01.
const julianDayOfEpoch = 2_440_588

// int96Micros is the instant of an INT96 timestamp in µs since the epoch, computed as Spark's
// reader does (DateTimeUtils.fromJulianDay): (day − 2440588) × 86400·10⁶ + nanos / 1000, in
// wrapping 64-bit arithmetic; for a valid value (nanos within the day) the division floors.
func int96Micros(v parquet.Int96) int64 {
	nanos := int64(binary.LittleEndian.Uint64(v[:8]))
	day := int64(int32(binary.LittleEndian.Uint32(v[8:])))
	return (day-julianDayOfEpoch)*86_400_000_000 + nanos/1000
}

// sparkLegacyInt96 is the key of a Parquet file's key-value metadata by which Spark marks INT96
// values written with int96RebaseModeInWrite=LEGACY: instants before the Gregorian switch were
// written as readings of the hybrid Julian calendar (java.util.GregorianCalendar).
const sparkLegacyInt96 = "org.apache.spark.legacyINT96"

// gregorianSwitchMicros is 1582-10-15 00:00:00 UTC, the first day of the Gregorian calendar in
// Spark's hybrid one: later instants are the same in both.
const gregorianSwitchMicros = -12_219_292_800_000_000

// rebaseJulianMicros turns an instant us before the Gregorian switch, read from a LEGACY INT96
// value (a reading of the Julian calendar in UTC), into the proleptic Gregorian instant of the
// same reading, as Spark's RebaseDateTime.rebaseJulianToGregorianMicros does for UTC. Spark
// rebases in the writer's zone; for other zones the result can differ from Spark's by the
// zone's local-mean-time offset, which only zones' pre-1900 history has.
func rebaseJulianMicros(us int64) int64 {
	day := us / 86_400_000_000
	if us%86_400_000_000 < 0 {
		day--
	}
	tod := us - day*86_400_000_000
	// Julian calendar date of the Julian day number (Richards' algorithm; the day number of
	// year 1 is positive, so / is a floor here).
	c := day + julianDayOfEpoch + 32082
	d := (4*c + 3) / 1461
	e := c - 1461*d/4
	m := (5*e + 2) / 153
	dom := e - (153*m+2)/5 + 1
	month := m + 3 - 12*(m/10)
	year := d - 4800 + m/10
	g := time.Date(int(year), time.Month(month), int(dom), 0, 0, 0, 0, time.UTC).Unix() / 86400
	return g*86_400_000_000 + tod
}

// sparkLegacyDateTime is the key of a Parquet file's key-value metadata by which Spark marks DATE
// and INT64 TIMESTAMP values written with datetimeRebaseModeInWrite=LEGACY (Spark 2.x and
// Databricks Runtime before 7 wrote so): days and instants before the Gregorian switch are
// readings of the hybrid Julian calendar, as sparkLegacyInt96 says for INT96.
const sparkLegacyDateTime = "org.apache.spark.legacyDateTime"

// sparkVersionKey is the key of a Parquet file's key-value metadata by which Spark records the
// version that wrote it ("3.5.1").
const sparkVersionKey = "org.apache.spark.version"

// sparkLegacyModes reports whether the INT96 values (int96) and the DATE and INT64 TIMESTAMP
// values (dateTime) of a file with key-value metadata kv are, before 1582-10-15, readings of
// the hybrid Julian calendar, as Spark's reader decides (DataSourceUtils.int96RebaseSpec and
// datetimeRebaseSpec): by the keys sparkLegacyInt96 and sparkLegacyDateTime, and for a file
// whose Spark version predates them, by the version: before 3.1.0 Spark wrote INT96 so
// always, before 3.0.0 DATE and INT64 TIMESTAMP too (versions compare as strings, as Spark
// compares them). A file with no Spark version is taken as its keys say (Spark would apply
// its session's read modes, EXCEPTION by default, failing on such values).
func sparkLegacyModes(kv metadata.KeyValueMetadata) (int96, dateTime bool) {
	int96 = kv.FindValue(sparkLegacyInt96) != nil
	dateTime = kv.FindValue(sparkLegacyDateTime) != nil
	if v := kv.FindValue(sparkVersionKey); v != nil {
		int96 = int96 || *v < "3.1.0"
		dateTime = dateTime || *v < "3.0.0"
	}
	return int96, dateTime
}

// rebaseLegacyDateTime rebases, in place, the DATE and INT64 TIMESTAMP values before the
// Gregorian switch of d, a batch of the file's field sf as the record reader decoded it (the
// file's own types), as Spark's RebaseDateTime.rebaseJulianToGregorianDays/Micros do for UTC.
// It follows sf down to its leaves and rebases only the leaves whose Parquet column
// legacyDateTimeLeaf names: an INT96 leaf (decoded and rebased by its own key,
// sparkLegacyInt96, in int96DecodeNested) is left as it is, so nested INT96 instants are not
// rebased twice. Only files carrying sparkLegacyDateTime pay for it. It fails only when d's
// children do not match sf's (an arrow-go change), never on a value.
func rebaseLegacyDateTime(pf *file.Reader, sf *pqarrow.SchemaField, d arrow.ArrayData) error {
	if !sf.IsLeaf() {
		kids := d.Children()
		if len(kids) != len(sf.Children) {
			return fmt.Errorf("column %s: %d child arrays for %d fields", sf.Field.Name, len(kids), len(sf.Children))
		}
		for i := range sf.Children {
			if err := rebaseLegacyDateTime(pf, &sf.Children[i], kids[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if legacyDateTimeLeaf(pf.MetaData().Schema.Column(sf.ColIndex)) {
		rebaseLegacyLeaf(d)
	}
	return nil
}

// legacyDateTimeLeaf reports whether Spark rebases col's values in a sparkLegacyDateTime file:
// an INT32 DATE or an INT64 TIMESTAMP adjusted to UTC (Spark's TIMESTAMP, in ms or µs).
// INT96 has its own key; TIMESTAMP_NTZ (not adjusted to UTC) is never rebased, as Spark's
// reader does not rebase it either.
func legacyDateTimeLeaf(col *schema.Column) bool {
	switch lt := col.LogicalType().(type) {
	case schema.DateLogicalType:
		return col.PhysicalType() == parquet.Types.Int32
	case schema.TimestampLogicalType:
		return col.PhysicalType() == parquet.Types.Int64 && lt.IsAdjustedToUTC()
	}
	return false
}

// rebaseLegacyLeaf rebases, in place, the date32 or timestamp values of d before the Gregorian
// switch (other types are left alone).
func rebaseLegacyLeaf(d arrow.ArrayData) {
	var perDay int64
	switch dt := d.DataType().(type) {
	case *arrow.Date32Type:
		perDay = 1
	case *arrow.TimestampType:
		perDay = 86_400 * map[arrow.TimeUnit]int64{arrow.Second: 1, arrow.Millisecond: 1e3, arrow.Microsecond: 1e6, arrow.Nanosecond: 1e9}[dt.Unit]
	default:
		return
	}
	bufs := d.Buffers()
	if len(bufs) < 2 || bufs[1] == nil {
		return
	}
	var valid []byte
	if bufs[0] != nil && d.NullN() > 0 {
		valid = bufs[0].Bytes()
	}
	off, n := d.Offset(), d.Len()
	rebase := func(v int64) int64 {
		// to µs, rebase, back (a day boundary maps to a day boundary; µs keep their digits)
		day := v / perDay
		if v%perDay < 0 {
			day--
		}
		rest := v - day*perDay
		return rebaseJulianMicros(day*86_400_000_000)/86_400_000_000*perDay + rest
	}
	switchDay := int64(gregorianSwitchMicros / 86_400_000_000)
	if perDay == 1 {
		vals := arrow.Date32Traits.CastFromBytes(bufs[1].Bytes())[off : off+n]
		for i, v := range vals {
			if int64(v) < switchDay && (valid == nil || bitutil.BitIsSet(valid, off+i)) {
				vals[i] = arrow.Date32(rebase(int64(v)))
			}
		}
		return
	}
	vals := arrow.TimestampTraits.CastFromBytes(bufs[1].Bytes())[off : off+n]
	for i, v := range vals {
		if int64(v) < switchDay*perDay && (valid == nil || bitutil.BitIsSet(valid, off+i)) {
			vals[i] = arrow.Timestamp(rebase(int64(v)))
		}
	}
}

// int96Micro is the type of a decoded INT96 column: Spark's TIMESTAMP, an instant.
var int96Micro = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// isInt96Leaf reports whether f is an INT96 leaf column of file pf.
func isInt96Leaf(pf *file.Reader, f *pqarrow.SchemaField) bool {
	return f.IsLeaf() && pf.MetaData().Schema.Column(f.ColIndex).PhysicalType() == parquet.Types.Int96
}

// int96Column reads one top-level INT96 column over the row groups of a work unit, in runs of
// rows aligned with the record reader's batches of the file's other columns.
type int96Column struct {
	pf     *file.Reader
	leaf   int
	maxDef int16 // 0 for a required column, 1 for an optional one
	legacy bool  // the file's INT96 values are Julian readings before 1582-10-15 (sparkLegacyInt96)
	rgs    []int // row groups still to open
	cr     *file.Int96ColumnChunkReader
	vals   []parquet.Int96
	defs   []int16
}

func newInt96Column(pf *file.Reader, leaf int, rowGroups []int, legacy bool) *int96Column {
	return &int96Column{pf: pf, leaf: leaf, maxDef: pf.MetaData().Schema.Column(leaf).MaxDefinitionLevel(), rgs: rowGroups, legacy: legacy}
}

// next decodes the next n rows into timestamp[µs, UTC] data (a new reference). Errors are
// the Parquet reader's (a corrupt or truncated column chunk), never a value's.
func (c *int96Column) next(mem memory.Allocator, n int) (arrow.ArrayData, error) {
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
			c.close()
			cr, err := int96Reader(c.pf, c.rgs[0], c.leaf)
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
			us := int96Micros(c.vals[j])
			if c.legacy && us < gregorianSwitchMicros {
				us = rebaseJulianMicros(us)
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
	d := array.NewData(int96Micro, n, []*memory.Buffer{bm, vals}, nil, nulls, 0)
	release()
	return d, nil
}

// close releases the column chunk reader of the current row group.
func (c *int96Column) close() {
	if c.cr != nil {
		c.cr.Close()
		c.cr = nil
	}
}

// int96Reader opens the INT96 column chunk of leaf in row group rg of pf.
func int96Reader(pf *file.Reader, rg, leaf int) (*file.Int96ColumnChunkReader, error) {
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

func (c *int96Column) name() string { return c.pf.MetaData().Schema.Column(c.leaf).Path() }

// checkNestedInt96 reads the INT96 leaves of nested columns (values only) in rowGroups and
// fails when one lies outside the nanosecond range pqarrow decodes (years 1677 to 2262), so a
// file that would fail mid-way fails before its first row is emitted.
func checkNestedInt96(pf *file.Reader, leaves []int, rowGroups []int) error {
	const batch = 4096
	vals := make([]parquet.Int96, batch)
	defs := make([]int16, batch)
	reps := make([]int16, batch)
	for _, leaf := range leaves {
		col := pf.MetaData().Schema.Column(leaf)
		for _, rg := range rowGroups {
			cr, err := int96Reader(pf, rg, leaf)
			if err != nil {
				return err
			}
			err = checkInt96Chunk(cr, col, vals, defs, reps)
			cr.Close()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func checkInt96Chunk(cr *file.Int96ColumnChunkReader, col *schema.Column, vals []parquet.Int96, defs, reps []int16) error {
	for cr.HasNext() {
		_, n, err := cr.ReadBatch(int64(len(vals)), vals, defs, reps)
		if err != nil {
			return fmt.Errorf("INT96 column %s: %w", col.Path(), err)
		}
		for _, v := range vals[:n] {
			if _, err := v.ToTimestamp(); err != nil {
				return fmt.Errorf("column %s: INT96 timestamp %s inside a %s: INT96 under an Arrow extension type is read over years 1677 to 2262 only: %w",
					col.Path(), time.UnixMicro(int96Micros(v)).UTC().Format("2006-01-02 15:04:05.999999"), nestedKind(col), err)
			}
		}
	}
	return nil
}

// nestedKind names what holds an INT96 leaf, for the error of checkNestedInt96.
func nestedKind(col *schema.Column) string {
	if col.MaxRepetitionLevel() > 0 {
		return "list or map"
	}
	return "struct"
}

// int96NestedMicros makes pqarrow read each INT96 leaf inside the nested top-level field f of
// pf as timestamp[µs, UTC] (see above), rewriting the Arrow types of f and its descendants in
// the manifest; the leaves' batches must then go through int96DecodeNested. It reports false,
// changing nothing, when f holds no INT96 leaf or a type on the way to one is not a struct,
// list or map.
func int96NestedMicros(pf *file.Reader, f *pqarrow.SchemaField) bool {
	types := map[*pqarrow.SchemaField]arrow.DataType{}
	if ok, err := int96MicrosType(pf, f, types); !ok || err != nil {
		return false
	}
	for sf, t := range types {
		nf := *sf.Field
		nf.Type = t
		sf.Field = &nf
	}
	return true
}

// int96MicrosType records in types the Arrow type of sf and of each descendant with INT96
// leaves read as µs, and reports whether sf holds an INT96 leaf.
func int96MicrosType(pf *file.Reader, sf *pqarrow.SchemaField, types map[*pqarrow.SchemaField]arrow.DataType) (bool, error) {
	if sf.IsLeaf() {
		if !isInt96Leaf(pf, sf) {
			return false, nil
		}
		types[sf] = int96Micro
		return true, nil
	}
	found := false
	kids := make([]arrow.Field, len(sf.Children))
	for i := range sf.Children {
		c := &sf.Children[i]
		ok, err := int96MicrosType(pf, c, types)
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

// int96DecodeNested decodes in place, to µs since the epoch, the INT96 leaves of d, a batch
// of the nested field sf that int96NestedMicros rewrote: each such leaf's data buffer holds
// the raw 12-byte values, overwritten front to back by 8-byte ones. legacy rebases instants
// before 1582-10-15 as int96Column does. It fails only when a buffer is not what pqarrow is
// known to hand over (an arrow-go change), never on a value.
func int96DecodeNested(pf *file.Reader, sf *pqarrow.SchemaField, d arrow.ArrayData, legacy bool) error {
	if sf.IsLeaf() {
		if !isInt96Leaf(pf, sf) {
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
			us := int96Micros(parquet.Int96(b[12*i : 12*i+12]))
			if legacy && us < gregorianSwitchMicros {
				us = rebaseJulianMicros(us)
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
		if err := int96DecodeNested(pf, &sf.Children[i], kids[i], legacy); err != nil {
			return err
		}
	}
	return nil
}

// int96Nested is a nested column of a file whose INT96 leaves int96NestedMicros rewrote.
type int96Nested struct {
	col   int                  // its index in the record reader's batches
	field *pqarrow.SchemaField // its manifest field
}
