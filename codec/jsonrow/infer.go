package jsonrow

import (
	"github.com/apache/arrow-go/v18/arrow"
	"unicode/utf8"

	"github.com/streamkit/streamkit/codec/internal/textcol"
	"github.com/streamkit/streamkit/codec/internal/textconv"
	"github.com/streamkit/streamkit/codec/schema"
)

// InferOptions configure schema inference.
type InferOptions struct {
	// Rows is how many records a Reader samples (default 10000). Spark samples all input;
	// a stream cannot, so later records that disagree are rescued rather than widened.
	Rows int
	// Timestamps makes strings that parse as RFC 3339 timestamps infer as timestamp (µs, UTC)
	// and "YYYY-MM-DD" strings as date (Spark's inferTimestamp, off by default there too).
	Timestamps bool
}

// Inferrer infers an Arrow schema from sample records, as Spark's JSON schema inference does:
//
//	true/false       -> boolean
//	integer number   -> bigint (double if it does not fit 64 bits)
//	other number     -> double
//	string           -> string (timestamp/date with InferOptions.Timestamps)
//	array            -> array of the widened element types
//	object           -> struct of its members (top level: the columns)
//	null             -> no information; a column only ever null is string
//
// Values of one column across records are combined with schema.Widen (bigint with double is
// double; conflicting kinds become string; structs merge member-wise). Columns appear in
// order of first appearance and are all nullable. Records that are not valid JSON objects are
// ignored (the decoder reports them later).
type Inferrer struct {
	opts   InferOptions
	tz     tokenizer
	data   []byte
	fields []arrow.Field
	n      int
}

// NewInferrer returns an empty Inferrer.
func NewInferrer(opts InferOptions) *Inferrer {
	if opts.Rows <= 0 {
		opts.Rows = 10000
	}
	return &Inferrer{opts: opts}
}

// Add samples one record.
func (in *Inferrer) Add(record []byte) {
	if in.tz.tokenize(record) != nil || in.tz.toks[0].kind != tObj {
		return
	}
	in.data = record
	st := in.typeOf(0).(*arrow.StructType)
	in.fields = schema.WidenFields(in.fields, st.Fields())
	if in.n == 0 {
		// WidenFields marks fields missing from one side nullable; the first record's are too.
		for i := range in.fields {
			in.fields[i].Nullable = true
		}
	}
	in.n++
}

// Schema returns the inferred schema (possibly with no columns).
func (in *Inferrer) Schema() *arrow.Schema {
	fs := make([]arrow.Field, len(in.fields))
	for i, f := range in.fields {
		fs[i] = arrow.Field{Name: f.Name, Type: finalize(f.Type), Nullable: true}
	}
	return arrow.NewSchema(fs, nil)
}

// finalize replaces types that carry no information (Null) by string.
func finalize(t arrow.DataType) arrow.DataType {
	switch t := t.(type) {
	case *arrow.NullType:
		return arrow.BinaryTypes.String
	case *arrow.ListType:
		return arrow.ListOf(finalize(t.Elem()))
	case *arrow.StructType:
		fs := make([]arrow.Field, t.NumFields())
		for i, f := range t.Fields() {
			fs[i] = arrow.Field{Name: f.Name, Type: finalize(f.Type), Nullable: true}
		}
		return arrow.StructOf(fs...)
	}
	return t
}

func (in *Inferrer) typeOf(ti int32) arrow.DataType {
	t := &in.tz.toks[ti]
	switch t.kind {
	case tTrue, tFalse:
		return arrow.FixedWidthTypes.Boolean
	case tNumInt:
		if _, ok := textconv.ParseInt(in.data[t.start:t.end], 64); ok {
			return arrow.PrimitiveTypes.Int64
		}
		return arrow.PrimitiveTypes.Float64
	case tNumFloat:
		return arrow.PrimitiveTypes.Float64
	case tStr, tStrEsc:
		if in.opts.Timestamps && t.kind == tStr {
			if typ := textcol.InferTemporal(in.data[t.start+1 : t.end-1]); typ != nil {
				return typ
			}
		}
		return arrow.BinaryTypes.String
	case tNull:
		return arrow.Null
	case tArr:
		var et arrow.DataType = arrow.Null
		for e := ti + 1; e < t.next; e = in.tz.toks[e].next {
			et = schema.Widen(et, in.typeOf(e))
		}
		return arrow.ListOf(et)
	}
	// object
	var fields []arrow.Field
	seen := map[string]int{}
	for k := ti + 1; k < t.next; {
		kt := &in.tz.toks[k]
		if kt.kind == tStrEsc && !utf8.Valid(in.data[kt.start:kt.end]) {
			// A name that is not UTF-8 cannot name a column: the member is rescued (base64).
			k = in.tz.toks[k+1].next
			continue
		}
		var name string
		if kt.kind == tStr {
			name = string(in.data[kt.start+1 : kt.end-1])
		} else {
			name = string(unescape(nil, in.data[kt.start:kt.end]))
		}
		vt := in.typeOf(k + 1)
		if i, ok := seen[name]; ok {
			fields[i].Type = schema.Widen(fields[i].Type, vt)
		} else {
			seen[name] = len(fields)
			fields = append(fields, arrow.Field{Name: name, Type: vt, Nullable: true})
		}
		k = in.tz.toks[k+1].next
	}
	return arrow.StructOf(fields...)
}
