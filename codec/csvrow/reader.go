package csvrow

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/codec/internal/textcol"
	"github.com/streamkit/streamkit/codec/internal/textconv"
	"github.com/streamkit/streamkit/codec/schema"
)

// InferOptions configure schema inference.
type InferOptions struct {
	// Rows is how many records are sampled (default 10000).
	Rows int
	// Timestamps lets columns infer as date (YYYY-MM-DD) and timestamp (RFC 3339); otherwise
	// such text is string.
	Timestamps bool
}

// Reader reads a CSV stream as record batches.
type Reader struct {
	opts    Options
	p       *parser
	dec     *Decoder
	header  []string
	pending []pendingRec
	lines   []int64
	offsets []int64
	done    bool
}

type pendingRec struct {
	rec record
}

// NewReader returns a Reader of r. With Options.Header the first record names the columns.
// With a nil schema, the schema is inferred (see Infer) from the header and the first
// Options.Infer.Rows records, which are buffered and then decoded. Errors: read errors before
// the first batch, an unsupported schema, a header that is a bad record.
func NewReader(r io.Reader, s *arrow.Schema, opts Options) (*Reader, error) {
	opts.fill()
	rd := &Reader{opts: opts, p: newParser(r, opts.Dialect, opts.BufferSize)}
	if opts.Header {
		rec, err := rd.p.next()
		switch {
		case err == io.EOF:
		case err != nil:
			return nil, fmt.Errorf("csvrow: read header of %s: %w", opts.Source, err)
		case rec.bad != "":
			return nil, fmt.Errorf("csvrow: header of %s: %s", opts.Source, rec.bad)
		default:
			for i := range rec.ends {
				// A column name must be UTF-8 (Arrow schemas, JSON rescued data): bytes that
				// are not become U+FFFD.
				rd.header = append(rd.header, strings.ToValidUTF8(string(rec.field(i)), "\uFFFD"))
			}
		}
	}
	bindNames := rd.header
	if s == nil {
		inf := newInferrer(opts.Infer, rd.header, opts.NullValue)
		for len(rd.pending) < inf.rows {
			rec, err := rd.p.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("csvrow: infer schema of %s: %w", opts.Source, err)
			}
			if rec.bad == "" {
				inf.add(rec)
			}
			rd.pending = append(rd.pending, pendingRec{rec: cloneRecord(rec)})
		}
		s = inf.schema()
		if rd.header != nil {
			// Bind by the inferred names (duplicates and blanks renamed) so every column binds.
			names := make([]string, len(rd.header))
			for i := range names {
				names[i] = s.Field(i).Name
			}
			bindNames = names
		}
	}
	dec, err := NewDecoder(s, opts)
	if err != nil {
		return nil, err
	}
	if bindNames != nil {
		dec.Bind(bindNames)
	}
	rd.dec = dec
	return rd, nil
}

func cloneRecord(r *record) record {
	return record{
		buf:    append([]byte(nil), r.buf...),
		ends:   append([]int(nil), r.ends...),
		quoted: append([]bool(nil), r.quoted...),
		raw:    append([]byte(nil), r.raw...),
		line:   r.line, offset: r.offset, bad: r.bad,
	}
}

// Header returns the header names (nil without Options.Header).
func (r *Reader) Header() []string { return r.header }

// Schema is the output schema (with the rescued-data column).
func (r *Reader) Schema() *arrow.Schema { return r.dec.Schema() }

// Next returns the next batch of up to BatchRows rows (the caller releases it), or io.EOF.
// Errors: read errors, handler errors, *rescue.Error (FailFast, or no handler).
func (r *Reader) Next() (arrow.RecordBatch, error) {
	r.lines, r.offsets = r.lines[:0], r.offsets[:0]
	for r.dec.Len() < r.opts.BatchRows && !r.done {
		var rec *record
		if len(r.pending) > 0 {
			rec = &r.pending[0].rec
			r.pending = r.pending[1:]
		} else {
			var err error
			rec, err = r.p.next()
			if err == io.EOF {
				r.done = true
				break
			}
			if err != nil {
				return nil, fmt.Errorf("csvrow: read %s: %w", r.opts.Source, err)
			}
		}
		ok, err := r.dec.appendRecord(rec)
		if err != nil {
			return nil, err
		}
		if ok {
			r.lines = append(r.lines, rec.line)
			r.offsets = append(r.offsets, rec.offset)
		}
	}
	if r.dec.Len() == 0 {
		return nil, io.EOF
	}
	return r.dec.NewRecordBatch(), nil
}

// Positions returns, for each row of the last batch, the 1-based line where its record starts
// and its byte offset. The slices are reused by Next.
func (r *Reader) Positions() (lines, offsets []int64) { return r.lines, r.offsets }

// Release frees the decoder's memory.
func (r *Reader) Release() { r.dec.Release() }

// inferrer implements CSV schema inference (Spark's CSV inferSchema): per column, each
// non-null value is typed as the first that parses of
//
//	boolean, int, bigint, double, [date, timestamp], string
//
// and the column type is the schema.Widen of its values' types (int with bigint is bigint,
// with double is double; boolean with a number is string; date with timestamp is timestamp).
// A column with only nulls is string. Columns are named by the header, or _c0, _c1, ...; the
// number of columns is the header's, or the first record's.
type inferrer struct {
	opts  InferOptions
	rows  int
	names []string
	types []arrow.DataType
	null  string
}

func newInferrer(opts InferOptions, header []string, null string) *inferrer {
	if opts.Rows <= 0 {
		opts.Rows = 10000
	}
	in := &inferrer{opts: opts, rows: opts.Rows, null: null}
	if header != nil {
		in.names = append([]string(nil), header...)
		in.types = make([]arrow.DataType, len(header))
		for i := range in.types {
			in.types[i] = arrow.Null
		}
	}
	return in
}

func (in *inferrer) add(r *record) {
	if in.names == nil {
		for i := range r.ends {
			in.names = append(in.names, "_c"+strconv.Itoa(i))
			in.types = append(in.types, arrow.Null)
		}
	}
	for i := range r.ends {
		if i >= len(in.types) {
			break
		}
		v := r.field(i)
		quoted := i < len(r.quoted) && r.quoted[i]
		if len(v) == 0 || !quoted && string(v) == in.null {
			continue
		}
		in.types[i] = schema.Widen(in.types[i], in.typeOf(v))
	}
}

func (in *inferrer) typeOf(v []byte) arrow.DataType {
	if _, ok := textconv.ParseBool(v); ok {
		return arrow.FixedWidthTypes.Boolean
	}
	if _, ok := textconv.ParseInt(v, 32); ok {
		return arrow.PrimitiveTypes.Int32
	}
	if _, ok := textconv.ParseInt(v, 64); ok {
		return arrow.PrimitiveTypes.Int64
	}
	if c := v[0]; c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' {
		if _, ok := textconv.ParseFloat(v, 64); ok {
			return arrow.PrimitiveTypes.Float64
		}
	}
	if in.opts.Timestamps {
		if t := textcol.InferTemporal(v); t != nil {
			return t
		}
	}
	return arrow.BinaryTypes.String
}

func (in *inferrer) schema() *arrow.Schema {
	fields := make([]arrow.Field, len(in.names))
	seen := map[string]int{}
	for i, n := range in.names {
		t := in.types[i]
		if t.ID() == arrow.NULL {
			t = arrow.BinaryTypes.String
		}
		if n == "" {
			n = "_c" + strconv.Itoa(i)
		}
		// Duplicate header names get their position appended, as Spark does.
		if seen[n] > 0 {
			n += strconv.Itoa(i)
		}
		seen[n]++
		fields[i] = arrow.Field{Name: n, Type: t, Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}
