// Package csvrow reads CSV and TSV streams into Arrow record batches of a given (or inferred)
// schema: RFC 4180 quoting with configurable delimiter, quote and escape, quoted line breaks,
// CRLF, a UTF-8 BOM only at byte 0, a header row or positional columns. It is streaming —
// memory is bounded by the batch size plus the longest record — and correct at every buffer
// boundary.
//
// Records that do not fit the schema follow codec/rescue:
//
//   - a value that does not parse as its column's type is null and rescued as
//     {"<column>":"<text>"};
//   - a header column not in the schema, or a value beyond the last column (a ragged row), is
//     rescued under its header name, or "_c<i>" (0-based position) without one; empty extra
//     values carry no data and are not rescued;
//   - a row with fewer values than columns gets nulls for the missing ones;
//   - an unterminated quoted field at the end of input, or a NOT NULL column without a value,
//     makes the record bad (handler), and in DropMalformed/FailFast mode so does a mistyped
//     value or a row whose field count differs from the header's (or the schema's).
//
// Values per column type (Spark's CSV rules where they exist):
//
//	null                    an unquoted field equal to Options.NullValue (default "": empty);
//	                        a quoted empty field "" is the empty string for string columns
//	boolean                 true/false, any case
//	integers                optionally signed decimal digits, in range (no spaces)
//	float, double           decimal or exponent notation, NaN, Inf, Infinity (signed)
//	decimal(p,s)            decimal notation, rounded half-up to s digits, fitting p
//	string                  the text; text that is not valid UTF-8 does not fit (null, its bytes
//	                        rescued base64 under "<column>_base64", codec/rescue)
//	binary                  the raw bytes
//	date                    YYYY-MM-DD
//	timestamp               RFC 3339 (zone-less text in Options.Location), or an epoch number in
//	                        Options.EpochUnit (default milliseconds)
//	timestamp_ntz           RFC 3339 without a zone (timestamps: expanded years such as
//	                        +10000-01-01 are read; a timestamp(ns) column keeps nine digits)
//
// Nested types (struct, array, map) are not CSV column types; NewDecoder rejects them.
package csvrow

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec/internal/textcol"
	"github.com/streamkit/streamkit/codec/internal/textconv"
	"github.com/streamkit/streamkit/codec/rescue"
)

// Options configure decoding. The zero value reads RFC 4180 CSV without a header in
// permissive mode with a "_rescued_data" column, UTC for zone-less timestamps, epoch numbers
// in milliseconds, 64Ki-row batches.
type Options struct {
	Dialect
	// Header: the first record names the columns. Columns are then matched to the schema by
	// name (exact, case-sensitive); without a header, by position.
	Header bool
	// NullValue is the text of a null (default "", an empty field). Quoted "" stays an empty
	// string for string columns.
	NullValue string
	// Mode, OnBadRecord, RescuedColumn and NoRescuedColumn: as in codec/jsonrow (see
	// codec/rescue). Without OnBadRecord the first bad record is a *rescue.Error.
	Mode            rescue.Mode
	OnBadRecord     rescue.Handler
	RescuedColumn   string
	NoRescuedColumn bool
	// Location interprets zone-less timestamps (default UTC, never the machine's zone).
	Location *time.Location
	// EpochUnit of numbers in timestamp columns (default arrow.Millisecond; set EpochUnitSet to
	// use arrow.Second).
	EpochUnit    arrow.TimeUnit
	EpochUnitSet bool
	// Source names the stream in rescued data and bad records.
	Source string
	// OnNotUTF8, when set, is called once for every row whose rescued data keeps text that is
	// not valid UTF-8 (base64, codec/rescue), so a reader can count them and warn.
	OnNotUTF8 func()
	// BatchRows is the maximum rows per batch (default 65536).
	BatchRows int
	// BufferSize is the initial read buffer (default 256 KiB; grows to the longest record).
	BufferSize int
	// Infer configures inference when NewReader gets a nil schema.
	Infer InferOptions
	// Skip names input columns that are read past: neither decoded nor rescued, and never a
	// reason to call a record bad (read-files --columns leaves them out, as Spark's CSV column
	// pruning does). Names are header names, or Positions' without a header.
	Skip []string
	// Positions names the input columns by position when there is no header (default: the
	// schema's columns in order), so that a file can be decoded into some of its columns.
	Positions []string
	// Allocator for Arrow builders (default memory.DefaultAllocator).
	Allocator memory.Allocator
}

func (o *Options) fill() {
	o.Dialect.fill()
	if o.RescuedColumn == "" {
		o.RescuedColumn = rescue.Column
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	if !o.EpochUnitSet && o.EpochUnit == arrow.Second {
		o.EpochUnit = arrow.Millisecond
	}
	if o.BatchRows <= 0 {
		o.BatchRows = 1 << 16
	}
	if o.BufferSize <= 0 {
		o.BufferSize = 256 << 10
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
}

type column struct {
	name     string
	nullable bool
	typ      arrow.DataType
	textcol.Column
}

// Decoder turns CSV records into rows. Reader drives it over a stream; Append decodes one
// record held in memory (read-kafka's CSV-encoded message values).
type Decoder struct {
	opts    Options
	schema  *arrow.Schema
	sb      *array.StructBuilder
	cols    []*column // schema columns (without the rescued one)
	rescued *array.StringBuilder

	colMap   []int    // input position -> schema column, -1 for extra, skipped for Options.Skip
	colNames []string // input position -> name for rescue ("_c<i>" when unnamed)
	seen     []bool
	res      rescue.Builder
	check    bool
	rows     int
	scratch  []byte
	one      *parser // for Append
}

// NewDecoder builds a decoder for schema; columns are bound positionally until Bind is called.
func NewDecoder(schema *arrow.Schema, opts Options) (*Decoder, error) {
	opts.fill()
	fields, resIdx, err := textcol.WithRescuedColumn(schema, opts.RescuedColumn, opts.NoRescuedColumn)
	if err != nil {
		return nil, fmt.Errorf("csvrow: %w", err)
	}
	md := schema.Metadata()
	d := &Decoder{opts: opts, schema: arrow.NewSchema(fields, &md)}
	d.sb = array.NewStructBuilder(opts.Allocator, arrow.StructOf(fields...))
	hasNN := false
	for i, f := range fields {
		if i == resIdx {
			d.rescued = d.sb.FieldBuilder(i).(*array.StringBuilder)
			continue
		}
		c, err := newColumn(f, d.sb.FieldBuilder(i))
		if err != nil {
			d.sb.Release()
			return nil, err
		}
		hasNN = hasNN || !f.Nullable
		d.cols = append(d.cols, c)
	}
	d.seen = make([]bool, len(d.cols))
	d.check = opts.Mode != rescue.Permissive || hasNN || opts.NoRescuedColumn
	d.Bind(nil)
	return d, nil
}

func newColumn(f arrow.Field, b array.Builder) (*column, error) {
	c := &column{name: f.Name, nullable: f.Nullable, typ: f.Type}
	if !c.Init(f.Type, b) || c.Kind == textcol.Fixed || c.Kind == textcol.Time32 || c.Kind == textcol.Time64 {
		return nil, fmt.Errorf("csvrow: column %s: type %s cannot be read from CSV", f.Name, f.Type)
	}
	return c, nil
}

// Schema is the output schema: the input schema plus the rescued-data column.
func (d *Decoder) Schema() *arrow.Schema { return d.schema }

// Len is the number of rows appended since the last NewRecordBatch.
func (d *Decoder) Len() int { return d.rows }

// Release frees the builders.
func (d *Decoder) Release() { d.sb.Release() }

// NewRecordBatch returns the appended rows as a batch (caller releases) and resets.
func (d *Decoder) NewRecordBatch() arrow.RecordBatch {
	sa := d.sb.NewStructArray()
	defer sa.Release()
	d.rows = 0
	return array.RecordFromStructArray(sa, d.schema)
}

// skipped marks an input column of Options.Skip in Decoder.colMap (-1 is an extra column).
const skipped = -2

// Bind maps input columns to schema columns by header names (nil: by position, or by
// Options.Positions). Header names not in the schema are extra columns, rescued under their
// name, unless Options.Skip names them.
func (d *Decoder) Bind(header []string) {
	d.colMap, d.colNames = d.colMap[:0], d.colNames[:0]
	if header == nil && d.opts.Positions != nil {
		header = d.opts.Positions
	}
	if header == nil {
		for i := range d.cols {
			d.colMap = append(d.colMap, i)
			d.colNames = append(d.colNames, d.cols[i].name)
		}
		return
	}
	byName := make(map[string]int, len(d.cols))
	for i, c := range d.cols {
		byName[c.name] = i
	}
	for i, h := range header {
		idx, ok := byName[h]
		if !ok {
			idx = -1
		} else {
			delete(byName, h) // a repeated header name is extra the second time
		}
		if h == "" {
			h = "_c" + strconv.Itoa(i)
		}
		if idx < 0 && slices.Contains(d.opts.Skip, h) {
			idx = skipped
		}
		d.colMap = append(d.colMap, idx)
		d.colNames = append(d.colNames, h)
	}
}

// Source identifies a record passed to Append, for rescued data and bad records.
type Source struct {
	Name   string // file path or Kafka topic/partition@offset; "" leaves "_file" out
	Line   int64  // 1-based line, 0 if unknown
	Offset int64  // byte offset
}

// Append decodes data, one CSV record (a trailing line break is allowed), as the next row,
// binding columns as Bind set them. It returns true when a row was appended, false (nil error)
// when the record was bad and went to the handler — including data holding more than one
// record. Errors are the handler's, or *rescue.Error in FailFast mode or without a handler.
func (d *Decoder) Append(data []byte, src Source) (bool, error) {
	if d.one == nil {
		d.one = newParser(nil, d.opts.Dialect, 64)
	}
	d.one.reset(bytes.NewReader(data))
	rec, err := d.one.next()
	if err == io.EOF {
		rec, err = &record{raw: data}, nil
		rec.bad = "empty record"
	}
	if err != nil {
		return false, err
	}
	rec.line, rec.offset = src.Line, src.Offset
	if consumed := d.one.base + int64(d.one.pos); rec.bad == "" && consumed < int64(len(data)) && len(bytes.Trim(data[consumed:], "\r\n")) > 0 {
		rec.bad = "value holds more than one CSV record"
		rec.raw = data
	}
	saved := d.opts.Source
	d.opts.Source = src.Name
	defer func() { d.opts.Source = saved }()
	return d.appendRecord(rec)
}

func b2s(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// appendRecord decodes one parsed record. It returns false (nil error) when the record was
// bad and went to the handler.
func (d *Decoder) appendRecord(r *record) (bool, error) {
	if r.bad != "" {
		return false, d.bad(r, r.bad)
	}
	if d.check {
		if problem := d.decode(r, true); problem != "" {
			return false, d.bad(r, problem)
		}
	}
	d.decode(r, false)
	d.rows++
	return true, nil
}

func (d *Decoder) bad(r *record, reason string) error {
	br := rescue.BadRecord{Source: d.opts.Source, Line: r.line, Offset: r.offset, Reason: reason, Raw: append([]byte(nil), r.raw...)}
	return rescue.Report(d.opts.Mode, d.opts.OnBadRecord, br)
}

// decode converts r's fields; with dry it only reports the first problem that makes the record
// bad in the current mode.
func (d *Decoder) decode(r *record, dry bool) string {
	strict := d.opts.Mode != rescue.Permissive || d.opts.NoRescuedColumn
	n := len(r.ends)
	if dry && strict && n != len(d.colMap) {
		return fmt.Sprintf("record has %d fields, expected %d", n, len(d.colMap))
	}
	for i := range d.seen {
		d.seen[i] = false
	}
	if !dry {
		d.sb.Append(true)
		d.res.Reset()
	}
	start := 0
	for i := 0; i < n; i++ {
		v := r.buf[start:r.ends[i]]
		start = r.ends[i]
		quoted := i < len(r.quoted) && r.quoted[i]
		ci := -1
		if i < len(d.colMap) {
			ci = d.colMap[i]
		}
		if ci == skipped {
			continue
		}
		if ci < 0 {
			if !dry && d.rescued != nil && (len(v) > 0 || quoted) {
				name := ""
				if i < len(d.colNames) {
					name = d.colNames[i]
				} else {
					name = "_c" + strconv.Itoa(i)
				}
				d.res.AddString(name, v)
			}
			continue
		}
		c := d.cols[ci]
		d.seen[ci] = true
		isNull := !quoted && b2s(v) == d.opts.NullValue || len(v) == 0 && c.Kind != textcol.String
		if isNull {
			if dry && !c.nullable {
				return fmt.Sprintf("field %s: null value for NOT NULL column", c.name)
			}
			if !dry {
				c.B.AppendNull()
			}
			continue
		}
		if ok := d.value(c, v, dry); !ok {
			if dry {
				if strict || !c.nullable {
					shown := v
					if len(shown) > 64 {
						shown = append(shown[:61:61], "..."...)
					}
					if c.Kind == textcol.String {
						return fmt.Sprintf("field %s: %q is not valid UTF-8", c.name, shown)
					}
					return fmt.Sprintf("field %s: %q is not a valid %s", c.name, shown, textcol.TypeName(c.typ))
				}
				continue
			}
			c.B.AppendNull()
			if d.rescued != nil {
				d.res.AddString(c.name, v)
			}
		}
	}
	for ci, ok := range d.seen {
		if ok {
			continue
		}
		c := d.cols[ci]
		if dry {
			if !c.nullable {
				return fmt.Sprintf("field %s: missing value for NOT NULL column", c.name)
			}
			continue
		}
		c.B.AppendNull()
	}
	if !dry && d.rescued != nil {
		if d.res.NotUTF8() && d.opts.OnNotUTF8 != nil {
			d.opts.OnNotUTF8()
		}
		if out := d.res.Finish(d.opts.Source); out != nil {
			d.rescued.BinaryBuilder.Append(out)
		} else {
			d.rescued.AppendNull()
		}
	}
	return ""
}

// value parses v into c (appending unless dry); false means it does not fit.
func (d *Decoder) value(c *column, v []byte, dry bool) bool {
	switch c.Kind {
	case textcol.String:
		if !utf8.Valid(v) {
			return false
		}
		if !dry {
			c.Bin.Append(v)
		}
	case textcol.Binary:
		if !dry {
			c.Bin.Append(v)
		}
	case textcol.Int64, textcol.Int32, textcol.Int16, textcol.Int8:
		x, ok := textconv.ParseInt(v, c.Bits)
		if !ok {
			return false
		}
		if !dry {
			c.AppendInt(x)
		}
	case textcol.Uint64, textcol.Uint32, textcol.Uint16, textcol.Uint8:
		x, ok := textconv.ParseUint(v, c.Bits)
		if !ok {
			return false
		}
		if !dry {
			c.AppendUint(x)
		}
	case textcol.Float64, textcol.Float32:
		x, ok := textconv.ParseFloat(v, c.Bits)
		if !ok {
			return false
		}
		if !dry {
			c.AppendFloat(x)
		}
	case textcol.Bool:
		x, ok := textconv.ParseBool(v)
		if !ok {
			return false
		}
		if !dry {
			c.Bool.Append(x)
		}
	case textcol.Decimal:
		x, ok := textconv.ParseDecimal128(v, c.Prec, c.Scale)
		if !ok {
			return false
		}
		if !dry {
			c.Dec.Append(x)
		}
	case textcol.Date:
		x, ok := textconv.ParseDate(v)
		if !ok {
			return false
		}
		if !dry {
			c.Date.Append(arrow.Date32(x))
		}
	case textcol.Timestamp, textcol.TimestampNTZ:
		ts, ok := c.TimestampFromText(v, d.opts.Location) // in the column's unit
		if !ok {
			var us int64
			if c.Kind == textcol.TimestampNTZ {
				return false
			}
			if x, iok := textconv.ParseInt(v, 64); iok {
				us, ok = textconv.EpochIntToMicros(x, int(d.opts.EpochUnit))
			} else if f, fok := textconv.ParseFloat(v, 64); fok {
				us, ok = textconv.EpochToMicros(f, int(d.opts.EpochUnit))
			}
			if !ok {
				return false
			}
			ts = c.FromMicros(us)
		}
		if !dry {
			c.Ts.Append(arrow.Timestamp(ts))
		}
	case textcol.Null:
		return false
	}
	return true
}
