package kafka

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Output columns, named and typed as Spark's Kafka source (Structured Streaming + Kafka
// Integration Guide, "Reading Data from Kafka"), in this order.
const (
	ColKey           = "key"           // binary (or string/struct with --key-format), null = no key
	ColValue         = "value"         // binary (or string/struct with --value-format), null = tombstone
	ColTopic         = "topic"         // string
	ColPartition     = "partition"     // int32
	ColOffset        = "offset"        // int64
	ColTimestamp     = "timestamp"     // timestamp[us, UTC]: the record's create or log-append time
	ColTimestampType = "timestampType" // int32: 0 CreateTime, 1 LogAppendTime
	ColHeaders       = "headers"       // list<struct<key string, value binary>>, null when none
	// ColRescued holds what a --key-format/--value-format decoder could not fit in its column
	// (codec/rescue contract): a JSON object, null when nothing was rescued.
	ColRescued = "_rescued_data"
)

// Formats of --key-format and --value-format.
const (
	FormatBinary = "binary"
	FormatString = "string"
	FormatJSON   = "json"
	FormatAvro   = "avro"
)

// HeaderType is the element type of the headers column: struct<key string, value binary>.
var HeaderType = arrow.StructOf(
	arrow.Field{Name: "key", Type: arrow.BinaryTypes.String, Nullable: true},
	arrow.Field{Name: "value", Type: arrow.BinaryTypes.Binary, Nullable: true},
)

// HeadersType is the type of the headers column.
var HeadersType = arrow.ListOf(HeaderType)

// TimestampType is the type of the timestamp column.
var TimestampType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// fieldCodec turns a record's key or value bytes into one column.
type fieldCodec interface {
	field(name string) arrow.Field
	builder(mem memory.Allocator) array.Builder
	// append appends b (nil = null) to bld; a non-empty rescued string reports bytes that do
	// not fit the column (the column gets a null).
	append(bld array.Builder, b []byte) (rescued bool)
}

type binaryCodec struct{}

func (binaryCodec) field(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.BinaryTypes.Binary, Nullable: true}
}
func (binaryCodec) builder(mem memory.Allocator) array.Builder {
	return array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
}
func (binaryCodec) append(bld array.Builder, b []byte) bool {
	bb := bld.(*array.BinaryBuilder)
	if b == nil {
		bb.AppendNull()
	} else {
		bb.Append(b)
	}
	return false
}

// stringCodec keeps UTF-8 bytes as a string; bytes that are not UTF-8 leave the column null
// and are rescued (base64) instead of being mangled.
type stringCodec struct{}

func (stringCodec) field(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}
}
func (stringCodec) builder(mem memory.Allocator) array.Builder { return array.NewStringBuilder(mem) }
func (stringCodec) append(bld array.Builder, b []byte) bool {
	sb := bld.(*array.StringBuilder)
	switch {
	case b == nil:
		sb.AppendNull()
	case utf8.Valid(b):
		sb.BinaryBuilder.Append(b)
	default:
		sb.AppendNull()
		return true
	}
	return false
}

func codecFor(format, flag string) (fieldCodec, error) {
	switch format {
	case "", FormatBinary:
		return binaryCodec{}, nil
	case FormatString:
		return stringCodec{}, nil
	case FormatJSON, FormatAvro:
		return nil, fmt.Errorf("%s %s: not available yet in this build (binary or string; decode downstream)", flag, format)
	}
	return nil, fmt.Errorf("%s must be binary, string, json or avro, got %q", flag, format)
}

// Schema returns the output schema for the given key and value codecs.
func schemaFor(key, value fieldCodec, rescued bool) *arrow.Schema {
	fs := []arrow.Field{
		key.field(ColKey),
		value.field(ColValue),
		{Name: ColTopic, Type: arrow.BinaryTypes.String},
		{Name: ColPartition, Type: arrow.PrimitiveTypes.Int32},
		{Name: ColOffset, Type: arrow.PrimitiveTypes.Int64},
		{Name: ColTimestamp, Type: TimestampType},
		{Name: ColTimestampType, Type: arrow.PrimitiveTypes.Int32},
		{Name: ColHeaders, Type: HeadersType, Nullable: true},
	}
	if rescued {
		fs = append(fs, arrow.Field{Name: ColRescued, Type: arrow.BinaryTypes.String, Nullable: true})
	}
	return arrow.NewSchema(fs, nil)
}

// builder accumulates records into one Arrow batch.
type builder struct {
	schema     *arrow.Schema
	keyC, valC fieldCodec
	key, val   array.Builder
	topic      *array.StringBuilder
	part       *array.Int32Builder
	off        *array.Int64Builder
	ts         *array.TimestampBuilder
	tsType     *array.Int32Builder
	hdrs       *array.ListBuilder
	hdr        *array.StructBuilder
	hk         *array.StringBuilder
	hv         *array.BinaryBuilder
	rescued    *array.StringBuilder
	rows       int
	scratch    []byte
}

func newBuilder(mem memory.Allocator, schema *arrow.Schema, keyC, valC fieldCodec) *builder {
	b := &builder{schema: schema, keyC: keyC, valC: valC}
	b.key = keyC.builder(mem)
	b.val = valC.builder(mem)
	b.topic = array.NewStringBuilder(mem)
	b.part = array.NewInt32Builder(mem)
	b.off = array.NewInt64Builder(mem)
	b.ts = array.NewTimestampBuilder(mem, TimestampType)
	b.tsType = array.NewInt32Builder(mem)
	b.hdrs = array.NewListBuilder(mem, HeaderType)
	b.hdr = b.hdrs.ValueBuilder().(*array.StructBuilder)
	b.hk = b.hdr.FieldBuilder(0).(*array.StringBuilder)
	b.hv = b.hdr.FieldBuilder(1).(*array.BinaryBuilder)
	if schema.NumFields() > 8 {
		b.rescued = array.NewStringBuilder(mem)
	}
	return b
}

// reserve prepares room for n more rows of about dataBytes key+value bytes.
func (b *builder) reserve(n int) {
	b.topic.Reserve(n)
	b.part.Reserve(n)
	b.off.Reserve(n)
	b.ts.Reserve(n)
	b.tsType.Reserve(n)
	b.hdrs.Reserve(n)
}

func (b *builder) add(r *kgo.Record) {
	rk := b.keyC.append(b.key, r.Key)
	rv := b.valC.append(b.val, r.Value)
	b.topic.Append(r.Topic)
	b.part.Append(r.Partition)
	b.off.Append(r.Offset)
	b.ts.Append(arrow.Timestamp(r.Timestamp.UnixMicro()))
	b.tsType.Append(int32(r.Attrs.TimestampType()))
	if len(r.Headers) == 0 {
		b.hdrs.AppendNull()
	} else {
		b.hdrs.Append(true)
		for _, h := range r.Headers {
			b.hdr.Append(true)
			b.hk.Append(h.Key)
			if h.Value == nil {
				b.hv.AppendNull()
			} else {
				b.hv.Append(h.Value)
			}
		}
	}
	if b.rescued != nil {
		if rk || rv {
			b.rescued.Append(b.rescue(r, rk, rv))
		} else {
			b.rescued.AppendNull()
		}
	}
	b.rows++
}

// rescue renders the rescued-data object of r: the raw bytes of a key or value that did not
// decode, base64, and where the record came from (codec/rescue layout, "_file" naming the
// source as topic/partition@offset).
func (b *builder) rescue(r *kgo.Record, key, val bool) string {
	s := b.scratch[:0]
	s = append(s, '{')
	if key {
		s = append(s, `"key_base64":"`...)
		s = base64.StdEncoding.AppendEncode(s, r.Key)
		s = append(s, `",`...)
	}
	if val {
		s = append(s, `"value_base64":"`...)
		s = base64.StdEncoding.AppendEncode(s, r.Value)
		s = append(s, `",`...)
	}
	s = append(s, `"_file":`...)
	s = strconv.AppendQuote(s, fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset))
	s = append(s, '}')
	b.scratch = s
	return string(s)
}

// finish returns the rows added so far as a batch (nil when none) and resets the builder.
func (b *builder) finish() arrow.RecordBatch {
	if b.rows == 0 {
		return nil
	}
	cols := []arrow.Array{b.key.NewArray(), b.val.NewArray(), b.topic.NewArray(), b.part.NewArray(), b.off.NewArray(),
		b.ts.NewArray(), b.tsType.NewArray(), b.hdrs.NewArray()}
	if b.rescued != nil {
		cols = append(cols, b.rescued.NewArray())
	}
	rec := array.NewRecordBatch(b.schema, cols, int64(b.rows))
	for _, c := range cols {
		c.Release()
	}
	b.rows = 0
	return rec
}

func (b *builder) release() {
	for _, x := range []array.Builder{b.key, b.val, b.topic, b.part, b.off, b.ts, b.tsType, b.hdrs} {
		x.Release()
	}
	if b.rescued != nil {
		b.rescued.Release()
	}
}
