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
//	                   (timestamp text: years outside 0000–9999 as ISO 8601 expanded years,
//	                   "+10000-01-01T00:00:00Z"; a timestamp(ns) column keeps all nine
//	                   fraction digits, coarser units truncate)
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
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec/internal/textcol"
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
	// OnNotUTF8, when set, is called once for every row whose rescued data keeps text that is
	// not valid UTF-8 (base64, codec/rescue), so a reader can count them and warn.
	OnNotUTF8 func()
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
	// Skip names top-level members that are read past: neither decoded nor rescued, and never
	// a reason to call a record bad (read-files --columns leaves them out).
	Skip []string
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

// Nested kinds; the scalar ones are textcol's.
const (
	kList = textcol.Nested + iota
	kStruct
	kMap
)

// field is one node of the decoder compiled from the schema.
type field struct {
	name     string
	nullable bool
	typ      arrow.DataType
	textcol.Column

	list *array.ListBuilder
	st   *array.StructBuilder
	mp   *array.MapBuilder

	children []*field
	index    map[string]int // struct members by name
	slots    []int32        // struct: tape index of each member's value, -1 when absent
	hasNN    bool           // some descendant (or self) is NOT NULL
	lastData int            // string/binary bytes of the last batch (root members only)
}

// Decoder decodes JSON values into rows of an Arrow schema. It is not safe for concurrent use.
type Decoder struct {
	opts    Options
	schema  *arrow.Schema // output schema (input + rescued column)
	root    *field
	rescued *array.StringBuilder // nil when disabled
	resIdx  int                  // index of the rescued column in the root struct, -1 if none
	skip    map[string]bool      // Options.Skip

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

	rows     int
	lastRows int // rows of the last batch: the next one is reserved at this size
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
	fields, resIdx, err := textcol.WithRescuedColumn(schema, opts.RescuedColumn, opts.NoRescuedColumn)
	if err != nil {
		return nil, fmt.Errorf("jsonrow: %w", err)
	}
	d := &Decoder{opts: opts, resIdx: resIdx}
	for _, name := range opts.Skip {
		if d.skip == nil {
			d.skip = map[string]bool{}
		}
		d.skip[name] = true
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
	n := &field{name: f.Name, nullable: f.Nullable, typ: f.Type, hasNN: !f.Nullable}
	if n.Init(f.Type, b) {
		return n, nil
	}
	switch t := f.Type.(type) {
	case *arrow.ListType:
		n.Kind, n.list = kList, b.(*array.ListBuilder)
		c, err := compile(t.ElemField(), n.list.ValueBuilder())
		if err != nil {
			return nil, err
		}
		n.children = []*field{c}
		n.hasNN = n.hasNN || c.hasNN
	case *arrow.MapType:
		n.Kind, n.mp = kMap, b.(*array.MapBuilder)
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
		n.Kind, n.st = kStruct, b.(*array.StructBuilder)
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

// Schema returns the output schema: the input schema plus the rescued-data column.
func (d *Decoder) Schema() *arrow.Schema { return d.schema }

// Len returns the number of rows appended since the last NewRecordBatch / NewStruct.
func (d *Decoder) Len() int { return d.rows }

// Release frees the builders. The Decoder must not be used afterwards.
func (d *Decoder) Release() { d.root.st.Release() }

// NewRecordBatch returns the rows appended so far as a record batch of Schema() and resets the
// decoder for the next batch. The caller must Release the batch.
func (d *Decoder) NewRecordBatch() arrow.RecordBatch {
	d.measure()
	sa := d.root.st.NewStructArray()
	defer sa.Release()
	d.presize()
	return array.RecordFromStructArray(sa, d.schema)
}

// measure remembers the size of the batch about to be finished (rows, bytes of each top-level
// string/binary member) and resets the row count.
func (d *Decoder) measure() {
	d.lastRows, d.rows = d.rows, 0
	for _, c := range d.root.children {
		if c.Bin != nil {
			c.lastData = c.Bin.DataLen()
		}
	}
}

// presize reserves the builders at the last batch's size: batches are mostly alike, and
// growing by doubling reallocates (and clears) every buffer several times per batch.
func (d *Decoder) presize() {
	if d.lastRows == 0 {
		return
	}
	d.root.st.Reserve(d.lastRows)
	for _, c := range d.root.children {
		if c.Bin != nil && c.lastData > 0 {
			c.Bin.ReserveData(c.lastData)
		}
	}
}

// NewStruct returns the rows appended so far as a struct array whose fields are Schema()'s,
// and resets the decoder; rows added with AppendNull are null structs. read-kafka uses it as
// the "value" column. The caller must Release it.
func (d *Decoder) NewStruct() *array.Struct {
	d.measure()
	sa := d.root.st.NewStructArray()
	d.presize()
	return sa
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
	// NameFunc, when set and Name is "", returns the name; it is called only when the name is
	// needed (a record with rescued data or a bad record), so a caller whose name is costly to
	// render per record (read-kafka's topic/partition@offset) pays for it on those records only.
	NameFunc func() string
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
		if d.res.NotUTF8() && d.opts.OnNotUTF8 != nil {
			d.opts.OnNotUTF8()
		}
		if d.res.Len() > 0 {
			d.rescued.BinaryBuilder.Append(d.res.Finish(src.name()))
		} else {
			d.rescued.AppendNull()
		}
	}
	d.rows++
	return true, nil
}

// name returns Name, or NameFunc's result when Name is "".
func (s Source) name() string {
	if s.Name == "" && s.NameFunc != nil {
		return s.NameFunc()
	}
	return s.Name
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
	br := rescue.BadRecord{Source: src.name(), Line: src.Line, Offset: src.Offset, Reason: reason, Raw: append([]byte(nil), data...)}
	return rescue.Report(d.opts.Mode, d.opts.OnBadRecord, br)
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
			if !utf8.Valid(raw) {
				d.problem = fmt.Sprintf("field %s: %q is not valid UTF-8", d.pathString(), raw)
			} else {
				d.problem = fmt.Sprintf("field %s: %s is not a valid %s", d.pathString(), raw, textcol.TypeName(f.typ))
			}
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
	hint := 0
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
		// Records mostly list their members in schema order: try the member after the last
		// one matched before hashing the name.
		idx, ok := hint, false
		if idx < len(f.children) && f.children[idx].name == b2s(key) && !(top && idx == d.resIdx) {
			ok = true
		} else {
			idx, ok = f.index[b2s(key)]
		}
		if ok {
			hint = idx + 1
		} else if top && d.skip[b2s(key)] {
			k = d.tz.toks[vi].next
			continue
		}
		if !ok || slots[idx] >= 0 {
			// Unknown field, or an earlier duplicate: rescue the raw value.
			var rescueIdx int32 = vi
			if ok {
				rescueIdx = slots[idx]
				slots[idx] = vi
			}
			if !d.dry && d.rescued != nil {
				vt := &d.tz.toks[rescueIdx]
				if len(d.path) == 0 && (kt.kind == tStr || !utf8.Valid(d.data[kt.start:kt.end])) {
					// (a name that is not UTF-8: AddRawKey keeps the member's bytes, base64)
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
				c.B.AppendNull()
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
//
// One switch over the column's kind, with one case per Arrow builder type, is kept in one
// function on purpose: it is the per-value hot path of JSON decoding, and each case appends
// to a typed builder without an interface call.
func (d *Decoder) value(f *field, ti int32) {
	t := &d.tz.toks[ti]
	ok := true
	switch f.Kind {
	case textcol.Bool:
		switch t.kind {
		case tTrue:
			if !d.dry {
				f.Bool.Append(true)
			}
		case tFalse:
			if !d.dry {
				f.Bool.Append(false)
			}
		default:
			ok = false
		}
	case textcol.Int8, textcol.Int16, textcol.Int32, textcol.Int64:
		if t.kind != tNumInt {
			ok = false
			break
		}
		v, good := textconv.ParseInt(d.data[t.start:t.end], f.Bits)
		if !good {
			ok = false
			break
		}
		if !d.dry {
			f.AppendInt(v)
		}
	case textcol.Uint8, textcol.Uint16, textcol.Uint32, textcol.Uint64:
		if t.kind != tNumInt {
			ok = false
			break
		}
		v, good := textconv.ParseUint(d.data[t.start:t.end], f.Bits)
		if !good {
			ok = false
			break
		}
		if !d.dry {
			f.AppendUint(v)
		}
	case textcol.Float32, textcol.Float64:
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
		v, good := textconv.ParseFloat(raw, f.Bits)
		if !good {
			ok = false
			break
		}
		if !d.dry {
			f.AppendFloat(v)
		}
	case textcol.Decimal:
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
		if v, ok = textconv.ParseDecimal128(raw, f.Prec, f.Scale); ok && !d.dry {
			f.Dec.Append(v)
		}
	case textcol.String:
		// Text that is not valid UTF-8 does not fit a string column: rescued, base64, as a
		// mistyped value (tStr tokens are valid by construction).
		if t.kind != tStr && !utf8.Valid(d.data[t.start:t.end]) {
			ok = false
			break
		}
		if d.dry {
			break
		}
		switch t.kind {
		case tStr:
			f.Bin.Append(d.data[t.start+1 : t.end-1])
		case tStrEsc:
			f.Bin.Append(d.strBody(t))
		default:
			f.Bin.Append(d.data[t.start:t.end])
		}
	case textcol.Binary, textcol.Fixed:
		if t.kind != tStr && t.kind != tStrEsc {
			ok = false
			break
		}
		body := d.strBody(t)
		var out []byte
		out, ok = textconv.DecodeBase64(d.b64[:0], body)
		if ok && f.Kind == textcol.Fixed && len(out) != f.Width {
			ok = false
		}
		if ok && !d.dry {
			if f.Kind == textcol.Fixed {
				f.Fix.Append(out)
			} else {
				f.Bin.Append(out)
			}
		}
		d.b64 = out[:0]
	case textcol.Date:
		if t.kind != tStr {
			ok = false
			break
		}
		var v int32
		if v, ok = textconv.ParseDate(d.data[t.start+1 : t.end-1]); ok && !d.dry {
			f.Date.Append(arrow.Date32(v))
		}
	case textcol.Timestamp, textcol.TimestampNTZ:
		var us int64
		inUnit := false // text is parsed into the column's unit, epoch numbers into µs
		switch t.kind {
		case tStr:
			us, ok = f.TimestampFromText(d.data[t.start+1:t.end-1], d.opts.Location)
			inUnit = true
		case tNumInt:
			if f.Kind == textcol.TimestampNTZ {
				ok = false
				break
			}
			var v int64
			if v, ok = textconv.ParseInt(d.data[t.start:t.end], 64); ok {
				us, ok = textconv.EpochIntToMicros(v, int(d.opts.EpochUnit))
			}
		case tNumFloat:
			if f.Kind == textcol.TimestampNTZ {
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
			if !inUnit {
				us = f.FromMicros(us)
			}
			f.Ts.Append(arrow.Timestamp(us))
		}
	case textcol.Time32, textcol.Time64:
		if t.kind != tStr {
			ok = false
			break
		}
		var us int64
		if us, ok = parseTimeOfDay(d.data[t.start+1 : t.end-1]); ok && !d.dry {
			if f.Kind == textcol.Time32 {
				f.T32.Append(arrow.Time32(f.FromMicros(us)))
			} else {
				f.T64.Append(arrow.Time64(f.FromMicros(us)))
			}
		}
	case textcol.Null:
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
					c.B.AppendNull()
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
					vf.B.AppendNull()
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
			f.B.AppendNull()
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
		d.problem = fmt.Sprintf("field %s: %s is not a valid %s (NOT NULL column)", d.pathString(), d.data[t.start:t.end], textcol.TypeName(f.typ))
	}
}

// appendMapKey appends a map key parsed from an object key's text.
func (d *Decoder) appendMapKey(kf *field, key []byte) {
	if d.dry {
		return
	}
	switch kf.Kind {
	case textcol.String:
		kf.Bin.Append(key)
		return
	case textcol.Int8, textcol.Int16, textcol.Int32, textcol.Int64:
		v, ok := textconv.ParseInt(key, kf.Bits)
		if !ok && d.rescued != nil {
			// Keys cannot be null; keep the row well-formed with 0 and rescue the entry's key.
			d.res.AddString(d.pathString()+"(key)", key)
		}
		kf.AppendInt(v)
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
