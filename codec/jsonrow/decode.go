// Package jsonrow decodes JSON records into Arrow record batches of a given schema, at about a
// million ~100-byte records per second per core, without reflection: a hand-written validating
// tokenizer (RFC 8259) writes each record onto a flat tape, and a decoder compiled from the
// schema walks the tape straight into Arrow builders.
//
// Two entry points share one Decoder:
//
//   - Reader reads a stream of records — one per line (NDJSON / JSON Lines) or the elements of
//     one top-level JSON array, which may span lines — and yields record batches, keeping the
//     line and byte offset of every row (read-files).
//   - Decoder.Append decodes one JSON value into the next row (read-kafka decodes each
//     message value into a struct column this way).
//
// Records that do not fit the schema follow codec/rescue: extra and mistyped fields go to the
// "_rescued_data" column, unparseable records to the bad-record handler.
//
// Accepted JSON per column type (anything else is a mismatch, rescued):
//
//	boolean            true, false
//	tinyint..bigint    integer numbers in range (no fraction, no exponent, no quotes)
//	uint8..uint64      non-negative integer numbers in range
//	float, double      any number; the strings "NaN", "Infinity", "+Infinity", "-Infinity"
//	decimal(p,s)       a number or a string holding one; rounded half-up to s digits; must fit p
//	string             a string; any other value is stored as its JSON text (as Spark does)
//	binary             a base64 string (standard or URL alphabet, padded or not)
//	fixed_size_binary  a base64 string of exactly the width
//	date               a "YYYY-MM-DD" string
//	timestamp          an RFC 3339 string (see textconv.ParseTimestamp: zone-less text is read in
//	                   Options.Location, never the machine's zone), or an epoch number in
//	                   Options.EpochUnit (default milliseconds; fractions allowed)
//	timestamp_ntz      an RFC 3339 string without a zone
//	time               a "hh:mm[:ss[.ffffff]]" string
//	array<T>           an array; each element decoded as T
//	struct<...>        an object; members matched by exact (case-sensitive) name
//	map<K,V>           an object; keys parsed as K (string or integer keys), values as V
//
// null (or a missing member) is null for any nullable column. A null, missing or mismatched
// value for a NOT NULL column makes the whole record bad (it goes to the handler). When a key
// appears twice in one object the last value wins and the earlier ones are rescued.
package jsonrow

import (
	"errors"
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec/internal/textconv"
	"github.com/streamkit/streamkit/codec/rescue"
)

// Options configure a Decoder. The zero value is usable: permissive mode, a "_rescued_data"
// column, UTC for zone-less timestamps, epoch numbers in milliseconds, the Go allocator.
type Options struct {
	// Mode is the parse mode (rescue.Permissive by default).
	Mode rescue.Mode
	// OnBadRecord receives unparseable records (and, in DropMalformed mode, mistyped ones).
	// When nil, the first bad record is returned as a *rescue.Error.
	OnBadRecord rescue.Handler
	// RescuedColumn names the rescued-data column appended to the schema (default
	// rescue.Column). If the schema already has a string column of that name it is used.
	// NoRescuedColumn disables it: extra fields are then ignored and mistyped values make the
	// record bad — nothing is dropped without a trace.
	RescuedColumn   string
	NoRescuedColumn bool
	// Location interprets timestamps written without a zone (default UTC). Never the machine's
	// zone unless the caller passes time.Local on purpose.
	Location *time.Location
	// EpochUnit is the unit of numbers in timestamp columns (default arrow.Millisecond, the
	// unit of Kafka timestamps and JavaScript's Date.now(); Spark uses seconds).
	EpochUnit arrow.TimeUnit
	// EpochUnitSet must be true for EpochUnit = arrow.Second to take effect (the zero value of
	// arrow.TimeUnit is Second).
	EpochUnitSet bool
	// Allocator for the Arrow builders (default memory.DefaultAllocator).
	Allocator memory.Allocator
}

func (o *Options) fill() {
	if o.RescuedColumn == "" {
		o.RescuedColumn = rescue.Column
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	if !o.EpochUnitSet && o.EpochUnit == arrow.Second {
		o.EpochUnit = arrow.Millisecond
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
}

type kind uint8

const (
	kBool kind = iota + 1
	kInt8
	kInt16
	kInt32
	kInt64
	kUint8
	kUint16
	kUint32
	kUint64
	kFloat32
	kFloat64
	kDecimal
	kString
	kLargeString
	kBinary
	kFixed
	kDate
	kTs
	kTsNTZ
	kTime32
	kTime64
	kList
	kStruct
	kMap
	kNull
)

// field is one node of the decoder compiled from the schema.
type field struct {
	name     string
	kind     kind
	nullable bool
	typ      arrow.DataType

	b     array.Builder
	bool_ *array.BooleanBuilder
	i8    *array.Int8Builder
	i16   *array.Int16Builder
	i32   *array.Int32Builder
	i64   *array.Int64Builder
	u8    *array.Uint8Builder
	u16   *array.Uint16Builder
	u32   *array.Uint32Builder
	u64   *array.Uint64Builder
	f32   *array.Float32Builder
	f64   *array.Float64Builder
	bin   *array.BinaryBuilder // string, large string, binary
	fix   *array.FixedSizeBinaryBuilder
	dec   *array.Decimal128Builder
	date  *array.Date32Builder
	ts    *array.TimestampBuilder
	t32   *array.Time32Builder
	t64   *array.Time64Builder
	list  *array.ListBuilder
	st    *array.StructBuilder
	mp    *array.MapBuilder

	// precision/scale for decimals, unit scale for timestamps and times, width for fixed.
	prec, scale int32
	tsDiv       int64 // µs are divided (ns: multiplied) to the column unit; see tsFromMicros
	tsMul       int64
	width       int
	bits        int // integer width

	children []*field
	index    map[string]int // struct members by name
	slots    []int32        // struct: tape index of each member's value, -1 when absent
	hasNN    bool           // some descendant (or self) is NOT NULL
}

// Decoder decodes JSON values into rows of an Arrow schema. It is not safe for concurrent use.
type Decoder struct {
	opts    Options
	schema  *arrow.Schema // output schema (input + rescued column)
	root    *field
	rescued *array.StringBuilder // nil when disabled
	resIdx  int                  // index of the rescued column in the root struct, -1 if none

	tz      tokenizer
	data    []byte
	res     rescue.Builder
	path    []pathSeg
	scratch []byte
	keyBuf  []byte
	b64     []byte

	// dry-run state
	dry     bool
	problem string
	check   bool // run a dry pass before appending (NOT NULL columns or non-permissive mode)

	rows int
}

type pathSeg struct {
	name  string
	index int // -1 for a named segment
}

// NewDecoder compiles a decoder for schema. The output schema (Schema) is schema plus the
// rescued-data column unless disabled. Unsupported column types (unions, intervals, ...)
// are an error.
func NewDecoder(schema *arrow.Schema, opts Options) (*Decoder, error) {
	opts.fill()
	d := &Decoder{opts: opts, resIdx: -1}
	fields := append([]arrow.Field(nil), schema.Fields()...)
	if !opts.NoRescuedColumn {
		idx := -1
		for i, f := range fields {
			if f.Name == opts.RescuedColumn {
				idx = i
			}
		}
		if idx < 0 {
			fields = append(fields, arrow.Field{Name: opts.RescuedColumn, Type: arrow.BinaryTypes.String, Nullable: true})
			idx = len(fields) - 1
		} else if fields[idx].Type.ID() != arrow.STRING {
			return nil, fmt.Errorf("jsonrow: column %s must be a string to hold rescued data, is %s", opts.RescuedColumn, fields[idx].Type)
		}
		d.resIdx = idx
	}
	md := schema.Metadata()
	d.schema = arrow.NewSchema(fields, &md)
	st := arrow.StructOf(fields...)
	sb := array.NewStructBuilder(opts.Allocator, st)
	root, err := compile(arrow.Field{Name: "", Type: st, Nullable: true}, sb)
	if err != nil {
		sb.Release()
		return nil, err
	}
	d.root = root
	if d.resIdx >= 0 {
		d.rescued = sb.FieldBuilder(d.resIdx).(*array.StringBuilder)
		// The rescued column is filled by the decoder, not from the record.
		delete(root.index, opts.RescuedColumn)
	}
	d.check = opts.Mode != rescue.Permissive || root.hasNN || opts.NoRescuedColumn
	return d, nil
}

func compile(f arrow.Field, b array.Builder) (*field, error) {
	n := &field{name: f.Name, nullable: f.Nullable, typ: f.Type, b: b, hasNN: !f.Nullable, bits: 64}
	switch t := f.Type.(type) {
	case *arrow.BooleanType:
		n.kind, n.bool_ = kBool, b.(*array.BooleanBuilder)
	case *arrow.Int8Type:
		n.kind, n.i8 = kInt8, b.(*array.Int8Builder)
		n.bits = 8
	case *arrow.Int16Type:
		n.kind, n.i16 = kInt16, b.(*array.Int16Builder)
		n.bits = 16
	case *arrow.Int32Type:
		n.kind, n.i32 = kInt32, b.(*array.Int32Builder)
		n.bits = 32
	case *arrow.Int64Type:
		n.kind, n.i64 = kInt64, b.(*array.Int64Builder)
	case *arrow.Uint8Type:
		n.kind, n.u8 = kUint8, b.(*array.Uint8Builder)
		n.bits = 8
	case *arrow.Uint16Type:
		n.kind, n.u16 = kUint16, b.(*array.Uint16Builder)
		n.bits = 16
	case *arrow.Uint32Type:
		n.kind, n.u32 = kUint32, b.(*array.Uint32Builder)
		n.bits = 32
	case *arrow.Uint64Type:
		n.kind, n.u64 = kUint64, b.(*array.Uint64Builder)
	case *arrow.Float32Type:
		n.kind, n.f32 = kFloat32, b.(*array.Float32Builder)
	case *arrow.Float64Type:
		n.kind, n.f64 = kFloat64, b.(*array.Float64Builder)
	case *arrow.Decimal128Type:
		n.kind, n.dec, n.prec, n.scale = kDecimal, b.(*array.Decimal128Builder), t.Precision, t.Scale
	case *arrow.StringType:
		n.kind, n.bin = kString, b.(*array.StringBuilder).BinaryBuilder
	case *arrow.LargeStringType:
		n.kind, n.bin = kLargeString, b.(*array.LargeStringBuilder).BinaryBuilder
	case *arrow.BinaryType:
		n.kind, n.bin = kBinary, b.(*array.BinaryBuilder)
	case *arrow.LargeBinaryType:
		n.kind, n.bin = kBinary, b.(*array.BinaryBuilder)
	case *arrow.FixedSizeBinaryType:
		n.kind, n.fix, n.width = kFixed, b.(*array.FixedSizeBinaryBuilder), t.ByteWidth
	case *arrow.Date32Type:
		n.kind, n.date = kDate, b.(*array.Date32Builder)
	case *arrow.TimestampType:
		n.kind, n.ts = kTs, b.(*array.TimestampBuilder)
		if t.TimeZone == "" {
			n.kind = kTsNTZ
		}
		n.tsDiv, n.tsMul = unitFromMicros(t.Unit)
	case *arrow.Time32Type:
		n.kind, n.t32 = kTime32, b.(*array.Time32Builder)
		n.tsDiv, n.tsMul = unitFromMicros(t.Unit)
	case *arrow.Time64Type:
		n.kind, n.t64 = kTime64, b.(*array.Time64Builder)
		n.tsDiv, n.tsMul = unitFromMicros(t.Unit)
	case *arrow.NullType:
		n.kind = kNull
	case *arrow.ListType:
		n.kind, n.list = kList, b.(*array.ListBuilder)
		c, err := compile(t.ElemField(), n.list.ValueBuilder())
		if err != nil {
			return nil, err
		}
		n.children = []*field{c}
		n.hasNN = n.hasNN || c.hasNN
	case *arrow.MapType:
		n.kind, n.mp = kMap, b.(*array.MapBuilder)
		switch t.KeyType().ID() {
		case arrow.STRING, arrow.LARGE_STRING, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		default:
			return nil, fmt.Errorf("jsonrow: column %s: map keys must be strings or integers, not %s", f.Name, t.KeyType())
		}
		k, err := compile(t.KeyField(), n.mp.KeyBuilder())
		if err != nil {
			return nil, err
		}
		v, err := compile(t.ItemField(), n.mp.ItemBuilder())
		if err != nil {
			return nil, err
		}
		k.nullable = false
		n.children = []*field{k, v}
		n.hasNN = n.hasNN || v.hasNN
	case *arrow.StructType:
		n.kind, n.st = kStruct, b.(*array.StructBuilder)
		n.index = make(map[string]int, t.NumFields())
		for i, cf := range t.Fields() {
			c, err := compile(cf, n.st.FieldBuilder(i))
			if err != nil {
				return nil, err
			}
			n.children = append(n.children, c)
			n.index[cf.Name] = i
			n.hasNN = n.hasNN || c.hasNN
		}
		n.slots = make([]int32, t.NumFields())
	default:
		return nil, fmt.Errorf("jsonrow: column %s: unsupported type %s", f.Name, f.Type)
	}
	return n, nil
}

// unitFromMicros returns how to convert µs into unit: divide by div, or multiply by mul.
func unitFromMicros(u arrow.TimeUnit) (div, mul int64) {
	switch u {
	case arrow.Second:
		return 1_000_000, 1
	case arrow.Millisecond:
		return 1000, 1
	case arrow.Nanosecond:
		return 1, 1000
	}
	return 1, 1
}

func (f *field) fromMicros(us int64) int64 {
	if f.tsMul != 1 {
		return us * f.tsMul
	}
	if f.tsDiv != 1 {
		q := us / f.tsDiv
		if us%f.tsDiv < 0 {
			q-- // floor, so instants before 1970 round toward the past
		}
		return q
	}
	return us
}

// Schema returns the output schema: the input schema plus the rescued-data column.
func (d *Decoder) Schema() *arrow.Schema { return d.schema }

// Len returns the number of rows appended since the last NewRecordBatch / NewStruct.
func (d *Decoder) Len() int { return d.rows }

// Release frees the builders. The Decoder must not be used afterwards.
func (d *Decoder) Release() { d.root.st.Release() }

// NewRecordBatch returns the rows appended so far as a record batch of Schema() and resets the
// decoder for the next batch. The caller must Release the batch.
func (d *Decoder) NewRecordBatch() arrow.RecordBatch {
	sa := d.root.st.NewStructArray()
	defer sa.Release()
	d.rows = 0
	return array.RecordFromStructArray(sa, d.schema)
}

// NewStruct returns the rows appended so far as a struct array whose fields are Schema()'s,
// and resets the decoder; rows added with AppendNull are null structs. read-kafka uses it as
// the "value" column. The caller must Release it.
func (d *Decoder) NewStruct() *array.Struct {
	d.rows = 0
	return d.root.st.NewStructArray()
}

// AppendNull appends a null row (for example a Kafka tombstone). Member columns get nulls, even
// NOT NULL ones: the struct itself is null.
func (d *Decoder) AppendNull() {
	d.root.st.AppendNull()
	d.rows++
}

// Source identifies where a record came from, for rescued data and bad records.
type Source struct {
	// Name is the file path or Kafka topic/partition@offset; "" leaves "_file" out.
	Name string
	// Line is the 1-based line where the record starts (0 if not line-based).
	Line int64
	// Offset is the byte offset of the record in the source.
	Offset int64
}

// Append decodes one JSON value — an object — and appends it as the next row.
//
// It returns true when a row was appended. It returns false, nil when the record was bad and
// was handed to Options.OnBadRecord (or dropped by DropMalformed); no row was appended then.
// Errors are the handler's error, or a *rescue.Error in FailFast mode or without a handler.
// data is not retained.
func (d *Decoder) Append(data []byte, src Source) (bool, error) {
	if err := d.tz.tokenize(data); err != nil {
		return false, d.bad(data, src, err.Error())
	}
	if d.tz.toks[0].kind != tObj {
		return false, d.bad(data, src, "record is a JSON "+kindName(d.tz.toks[0].kind)+", not an object")
	}
	d.data = data
	if d.check {
		d.dry, d.problem = true, ""
		d.path = d.path[:0]
		d.decodeStruct(d.root, 0, true)
		d.dry = false
		if d.problem != "" {
			return false, d.bad(data, src, d.problem)
		}
	}
	d.res.Reset()
	d.path = d.path[:0]
	d.decodeStruct(d.root, 0, true)
	if d.rescued != nil {
		if out := d.res.Finish(src.Name); out != nil {
			d.rescued.BinaryBuilder.Append(out)
		} else {
			d.rescued.AppendNull()
		}
	}
	d.rows++
	return true, nil
}

func kindName(k uint8) string {
	switch k {
	case tArr:
		return "array"
	case tStr, tStrEsc:
		return "string"
	case tNumInt, tNumFloat:
		return "number"
	case tTrue, tFalse:
		return "boolean"
	case tNull:
		return "null"
	}
	return "object"
}

func (d *Decoder) bad(data []byte, src Source, reason string) error {
	br := rescue.BadRecord{Source: src.Name, Line: src.Line, Offset: src.Offset, Reason: reason, Raw: append([]byte(nil), data...)}
	if d.opts.Mode == rescue.FailFast || d.opts.OnBadRecord == nil {
		return &rescue.Error{BadRecord: br}
	}
	return d.opts.OnBadRecord(br)
}

// ErrMismatch is wrapped by reasons describing a value that does not fit its column.
var ErrMismatch = errors.New("value does not fit the column type")

// pathString renders the current path, e.g. user.tags[2].id.
func (d *Decoder) pathString() string {
	var b []byte
	for _, s := range d.path {
		b = appendSeg(b, s)
	}
	return string(b)
}

func appendSeg(b []byte, s pathSeg) []byte {
	if s.index >= 0 {
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(s.index), 10)
		return append(b, ']')
	}
	if len(b) > 0 {
		b = append(b, '.')
	}
	return append(b, s.name...)
}

// mismatch records that the value at tape index ti does not fit f: in the dry run it becomes
// the record's problem (non-permissive modes); otherwise the raw value is rescued.
func (d *Decoder) mismatch(f *field, ti int32) {
	t := &d.tz.toks[ti]
	if d.dry {
		if d.problem == "" && (d.opts.Mode != rescue.Permissive || d.opts.NoRescuedColumn) {
			raw := d.data[t.start:t.end]
			if len(raw) > 64 {
				raw = append(raw[:61:61], "..."...)
			}
			d.problem = fmt.Sprintf("field %s: %s is not a valid %s", d.pathString(), raw, typeName(f.typ))
		}
		return
	}
	if d.rescued != nil {
		d.res.AddRaw(d.pathString(), d.data[t.start:t.end])
	}
}

// nullViolation records a null or missing value for a NOT NULL column at seg (dry run only).
func (d *Decoder) nullViolation(seg pathSeg, missing bool) {
	if d.dry && d.problem == "" {
		d.path = append(d.path, seg)
		what := "null"
		if missing {
			what = "missing"
		}
		d.problem = fmt.Sprintf("field %s: %s value for NOT NULL column", d.pathString(), what)
		d.path = d.path[:len(d.path)-1]
	}
}

func typeName(t arrow.DataType) string {
	switch t := t.(type) {
	case *arrow.Int8Type:
		return "tinyint"
	case *arrow.Int16Type:
		return "smallint"
	case *arrow.Int32Type:
		return "int"
	case *arrow.Int64Type:
		return "bigint"
	case *arrow.TimestampType:
		if t.TimeZone == "" {
			return "timestamp_ntz"
		}
		return "timestamp"
	case *arrow.ListType:
		return "array"
	case *arrow.StructType:
		return "struct (object)"
	case *arrow.MapType:
		return "map (object)"
	}
	return t.String()
}

// b2s views b as a string without copying.
func b2s(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// strBody returns the decoded body of the string token t.
func (d *Decoder) strBody(t *tok) []byte {
	raw := d.data[t.start:t.end]
	if t.kind == tStr {
		return raw[1 : len(raw)-1]
	}
	d.scratch = unescape(d.scratch[:0], raw)
	return d.scratch
}

// decodeStruct decodes the object at tape index ti into the struct node f (appending one
// struct slot unless top is true, where the caller appends the root row).
func (d *Decoder) decodeStruct(f *field, ti int32, top bool) {
	t := &d.tz.toks[ti]
	slots := f.slots
	for i := range slots {
		slots[i] = -1
	}
	// Walk key/value pairs.
	for k := ti + 1; k < t.next; {
		kt := &d.tz.toks[k]
		vi := k + 1
		var key []byte
		if kt.kind == tStr {
			key = d.data[kt.start+1 : kt.end-1]
		} else {
			d.keyBuf = unescape(d.keyBuf[:0], d.data[kt.start:kt.end])
			key = d.keyBuf
		}
		idx, ok := f.index[b2s(key)]
		if !ok || slots[idx] >= 0 {
			// Unknown field, or an earlier duplicate: rescue the raw value.
			var rescueIdx int32 = vi
			if ok {
				rescueIdx = slots[idx]
				slots[idx] = vi
			}
			if !d.dry && d.rescued != nil {
				vt := &d.tz.toks[rescueIdx]
				if len(d.path) == 0 && kt.kind == tStr {
					d.res.AddRawKey(d.data[kt.start:kt.end], d.data[vt.start:vt.end])
				} else {
					d.path = append(d.path, pathSeg{name: string(key), index: -1})
					d.res.AddRaw(d.pathString(), d.data[vt.start:vt.end])
					d.path = d.path[:len(d.path)-1]
				}
			}
		} else {
			slots[idx] = vi
		}
		k = d.tz.toks[vi].next
	}
	if !d.dry {
		f.st.Append(true)
	}
	// f.slots is reused by the next object decoded into this node (the next element of a
	// list); Arrow types are not recursive, so no nested call touches it before we finish.
	for i, c := range f.children {
		vi := slots[i]
		if top && i == d.resIdx {
			continue // filled after the record
		}
		if vi < 0 || d.tz.toks[vi].kind == tNull {
			if !c.nullable {
				d.nullViolation(pathSeg{name: c.name, index: -1}, vi < 0)
			}
			if !d.dry {
				c.b.AppendNull()
			}
			continue
		}
		d.path = append(d.path, pathSeg{name: c.name, index: -1})
		d.value(c, vi)
		d.path = d.path[:len(d.path)-1]
	}
}

// value decodes the non-null value at tape index ti into f. The value's path segment is on
// top of d.path.
func (d *Decoder) value(f *field, ti int32) {
	t := &d.tz.toks[ti]
	ok := true
	switch f.kind {
	case kBool:
		switch t.kind {
		case tTrue:
			if !d.dry {
				f.bool_.Append(true)
			}
		case tFalse:
			if !d.dry {
				f.bool_.Append(false)
			}
		default:
			ok = false
		}
	case kInt8, kInt16, kInt32, kInt64:
		if t.kind != tNumInt {
			ok = false
			break
		}
		v, good := textconv.ParseInt(d.data[t.start:t.end], f.bits)
		if !good {
			ok = false
			break
		}
		if !d.dry {
			switch f.kind {
			case kInt64:
				f.i64.Append(v)
			case kInt32:
				f.i32.Append(int32(v))
			case kInt16:
				f.i16.Append(int16(v))
			default:
				f.i8.Append(int8(v))
			}
		}
	case kUint8, kUint16, kUint32, kUint64:
		if t.kind != tNumInt {
			ok = false
			break
		}
		v, good := textconv.ParseUint(d.data[t.start:t.end], f.bits)
		if !good {
			ok = false
			break
		}
		if !d.dry {
			switch f.kind {
			case kUint64:
				f.u64.Append(v)
			case kUint32:
				f.u32.Append(uint32(v))
			case kUint16:
				f.u16.Append(uint16(v))
			default:
				f.u8.Append(uint8(v))
			}
		}
	case kFloat32, kFloat64:
		var raw []byte
		switch t.kind {
		case tNumInt, tNumFloat:
			raw = d.data[t.start:t.end]
		case tStr:
			raw = d.data[t.start+1 : t.end-1]
			switch b2s(raw) {
			case "NaN", "Infinity", "+Infinity", "-Infinity":
			default:
				ok = false
			}
		default:
			ok = false
		}
		if !ok {
			break
		}
		bits := 64
		if f.kind == kFloat32 {
			bits = 32
		}
		v, good := textconv.ParseFloat(raw, bits)
		if !good {
			ok = false
			break
		}
		if !d.dry {
			if f.kind == kFloat64 {
				f.f64.Append(v)
			} else {
				f.f32.Append(float32(v))
			}
		}
	case kDecimal:
		var raw []byte
		switch t.kind {
		case tNumInt, tNumFloat:
			raw = d.data[t.start:t.end]
		case tStr:
			raw = d.data[t.start+1 : t.end-1]
		default:
			ok = false
		}
		if !ok {
			break
		}
		var v decimal128.Num
		if v, ok = textconv.ParseDecimal128(raw, f.prec, f.scale); ok && !d.dry {
			f.dec.Append(v)
		}
	case kString, kLargeString:
		if d.dry {
			break
		}
		switch t.kind {
		case tStr:
			f.bin.Append(d.data[t.start+1 : t.end-1])
		case tStrEsc:
			f.bin.Append(d.strBody(t))
		default:
			f.bin.Append(d.data[t.start:t.end])
		}
	case kBinary, kFixed:
		if t.kind != tStr && t.kind != tStrEsc {
			ok = false
			break
		}
		body := d.strBody(t)
		var out []byte
		out, ok = textconv.DecodeBase64(d.b64[:0], body)
		if ok && f.kind == kFixed && len(out) != f.width {
			ok = false
		}
		if ok && !d.dry {
			if f.kind == kFixed {
				f.fix.Append(out)
			} else {
				f.bin.Append(out)
			}
		}
		d.b64 = out[:0]
	case kDate:
		if t.kind != tStr {
			ok = false
			break
		}
		var v int32
		if v, ok = textconv.ParseDate(d.data[t.start+1 : t.end-1]); ok && !d.dry {
			f.date.Append(arrow.Date32(v))
		}
	case kTs, kTsNTZ:
		var us int64
		switch t.kind {
		case tStr:
			var hasZone bool
			loc := d.opts.Location
			if f.kind == kTsNTZ {
				loc = time.UTC
			}
			us, hasZone, ok = textconv.ParseTimestamp(d.data[t.start+1:t.end-1], loc)
			if f.kind == kTsNTZ && hasZone {
				ok = false
			}
		case tNumInt:
			if f.kind == kTsNTZ {
				ok = false
				break
			}
			var v int64
			if v, ok = textconv.ParseInt(d.data[t.start:t.end], 64); ok {
				us, ok = textconv.EpochIntToMicros(v, int(d.opts.EpochUnit))
			}
		case tNumFloat:
			if f.kind == kTsNTZ {
				ok = false
				break
			}
			var v float64
			if v, ok = textconv.ParseFloat(d.data[t.start:t.end], 64); ok {
				us, ok = textconv.EpochToMicros(v, int(d.opts.EpochUnit))
			}
		default:
			ok = false
		}
		if ok && !d.dry {
			f.ts.Append(arrow.Timestamp(f.fromMicros(us)))
		}
	case kTime32, kTime64:
		if t.kind != tStr {
			ok = false
			break
		}
		var us int64
		if us, ok = parseTimeOfDay(d.data[t.start+1 : t.end-1]); ok && !d.dry {
			if f.kind == kTime32 {
				f.t32.Append(arrow.Time32(f.fromMicros(us)))
			} else {
				f.t64.Append(arrow.Time64(f.fromMicros(us)))
			}
		}
	case kNull:
		ok = false
	case kList:
		if t.kind != tArr {
			ok = false
			break
		}
		if !d.dry {
			f.list.Append(true)
		}
		c := f.children[0]
		i := 0
		for e := ti + 1; e < t.next; i++ {
			et := &d.tz.toks[e]
			if et.kind == tNull {
				if !c.nullable {
					d.nullViolation(pathSeg{index: i}, false)
				}
				if !d.dry {
					c.b.AppendNull()
				}
			} else {
				d.path = append(d.path, pathSeg{index: i})
				d.value(c, e)
				d.path = d.path[:len(d.path)-1]
			}
			e = et.next
		}
	case kStruct:
		if t.kind != tObj {
			ok = false
			break
		}
		// A nested struct node's slots may be in use by an enclosing list element of the same
		// node only after this call returns, so reuse is safe.
		d.decodeStruct(f, ti, false)
	case kMap:
		if t.kind != tObj {
			ok = false
			break
		}
		if !d.dry {
			f.mp.Append(true)
		}
		kf, vf := f.children[0], f.children[1]
		for k := ti + 1; k < t.next; {
			kt := &d.tz.toks[k]
			vi := k + 1
			keyBody := d.strBody(kt)
			var keyStr string
			if kt.kind == tStr {
				keyStr = b2s(keyBody)
			} else {
				keyStr = string(keyBody)
			}
			d.path = append(d.path, pathSeg{name: keyStr, index: -1})
			d.appendMapKey(kf, keyBody)
			d.path = d.path[:len(d.path)-1]
			vt := &d.tz.toks[vi]
			if vt.kind == tNull {
				if !vf.nullable {
					d.nullViolation(pathSeg{name: keyStr, index: -1}, false)
				}
				if !d.dry {
					vf.b.AppendNull()
				}
			} else {
				d.path = append(d.path, pathSeg{name: keyStr, index: -1})
				d.value(vf, vi)
				d.path = d.path[:len(d.path)-1]
			}
			k = vt.next
		}
	}
	if !ok {
		if !d.dry {
			f.b.AppendNull()
		}
		if !f.nullable {
			d.problemNN(f, ti)
		}
		d.mismatch(f, ti)
	}
}

// problemNN: a mismatched value in a NOT NULL column cannot become null.
func (d *Decoder) problemNN(f *field, ti int32) {
	if d.dry && d.problem == "" {
		t := &d.tz.toks[ti]
		d.problem = fmt.Sprintf("field %s: %s is not a valid %s (NOT NULL column)", d.pathString(), d.data[t.start:t.end], typeName(f.typ))
	}
}

// appendMapKey appends a map key parsed from an object key's text.
func (d *Decoder) appendMapKey(kf *field, key []byte) {
	if d.dry {
		return
	}
	switch kf.kind {
	case kString, kLargeString:
		kf.bin.Append(key)
		return
	case kInt8, kInt16, kInt32, kInt64:
		v, ok := textconv.ParseInt(key, kf.bits)
		if !ok && d.rescued != nil {
			// Keys cannot be null; keep the row well-formed with 0 and rescue the entry's key.
			d.res.AddString(d.pathString()+"(key)", key)
		}
		switch kf.kind {
		case kInt64:
			kf.i64.Append(v)
		case kInt32:
			kf.i32.Append(int32(v))
		case kInt16:
			kf.i16.Append(int16(v))
		default:
			kf.i8.Append(int8(v))
		}
	}
}

// parseTimeOfDay parses hh:mm[:ss[.ffffff]] into µs since midnight.
func parseTimeOfDay(b []byte) (int64, bool) {
	us, hasZone, ok := textconv.ParseTimestamp(append([]byte("1970-01-01T"), b...), time.UTC)
	if !ok || hasZone {
		return 0, false
	}
	return us, true
}
