package kafka

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamkit/streamkit/codec/jsonrow"
	"github.com/streamkit/streamkit/codec/rescue"
	"github.com/streamkit/streamkit/codec/schema"
	"github.com/streamkit/streamkit/internal/schemaregistry"
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

// fieldCodec turns a record's key or value bytes into one column. It owns its builder.
type fieldCodec interface {
	field(name string) arrow.Field
	// open creates the builder.
	open(mem memory.Allocator) error
	// append appends b (nil = null). When b does not decode, the row gets a null and the
	// reason is returned (the caller rescues the raw bytes); err stops the stage. src renders
	// the record's topic/partition@offset when a codec needs it (rescued data).
	append(b []byte, src func() string) (bad string, err error)
	finish() arrow.Array
	release()
	// decodes reports whether the codec decodes (string, json): its failures need a rescued
	// column.
	decodes() bool
}

type binaryCodec struct{ b *array.BinaryBuilder }

func (*binaryCodec) field(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.BinaryTypes.Binary, Nullable: true}
}
func (c *binaryCodec) open(mem memory.Allocator) error {
	c.b = array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	return nil
}
func (c *binaryCodec) append(b []byte, _ func() string) (string, error) {
	if b == nil {
		c.b.AppendNull()
	} else {
		c.b.Append(b)
	}
	return "", nil
}
func (c *binaryCodec) finish() arrow.Array { return c.b.NewArray() }
func (c *binaryCodec) release()            { c.b.Release() }
func (*binaryCodec) decodes() bool         { return false }

// stringCodec keeps UTF-8 bytes as a string; bytes that are not UTF-8 leave the column null
// and are rescued (base64) instead of being mangled.
type stringCodec struct{ b *array.StringBuilder }

func (*stringCodec) field(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}
}
func (c *stringCodec) open(mem memory.Allocator) error {
	c.b = array.NewStringBuilder(mem)
	return nil
}
func (c *stringCodec) append(b []byte, _ func() string) (string, error) {
	switch {
	case b == nil:
		c.b.AppendNull()
	case utf8.Valid(b):
		c.b.BinaryBuilder.Append(b)
	default:
		c.b.AppendNull()
		return "not valid UTF-8", nil
	}
	return "", nil
}
func (c *stringCodec) finish() arrow.Array { return c.b.NewArray() }
func (c *stringCodec) release()            { c.b.Release() }
func (*stringCodec) decodes() bool         { return true }

// jsonCodec decodes JSON objects into a struct column with codec/jsonrow: fields that do not
// fit the schema go to the struct's own _rescued_data member (codec/rescue), a record that is
// not a JSON object leaves the struct null and is rescued whole. A null Kafka key or value (a
// tombstone) is a null struct.
type jsonCodec struct {
	schema  *arrow.Schema
	d       *jsonrow.Decoder
	reason  string
	notUTF8 bool // the last value's rescued data keeps text that is not UTF-8 (base64)
}

func (c *jsonCodec) field(name string) arrow.Field {
	fs := append([]arrow.Field(nil), c.schema.Fields()...)
	has := false
	for _, f := range fs {
		has = has || f.Name == rescue.Column
	}
	if !has {
		fs = append(fs, arrow.Field{Name: rescue.Column, Type: arrow.BinaryTypes.String, Nullable: true})
	}
	return arrow.Field{Name: name, Type: arrow.StructOf(fs...), Nullable: true}
}
func (c *jsonCodec) open(mem memory.Allocator) error {
	d, err := jsonrow.NewDecoder(c.schema, jsonrow.Options{
		Allocator:   mem,
		OnBadRecord: func(br rescue.BadRecord) error { c.reason = br.Reason; return nil },
		OnNotUTF8:   func() { c.notUTF8 = true },
	})
	if err != nil {
		return err
	}
	c.d = d
	return nil
}
func (c *jsonCodec) append(b []byte, src func() string) (string, error) {
	if b == nil {
		c.d.AppendNull()
		return "", nil
	}
	c.reason, c.notUTF8 = "", false
	ok, err := c.d.Append(b, jsonrow.Source{NameFunc: src})
	if err != nil {
		return "", err
	}
	if !ok {
		c.d.AppendNull()
		return c.reason, nil
	}
	return "", nil
}
func (c *jsonCodec) finish() arrow.Array { return c.d.NewStruct() }
func (c *jsonCodec) release()            { c.d.Release() }
func (*jsonCodec) decodes() bool         { return true }

func codecFor(format, schemaSpec, flag string, reg *schemaregistry.Client) (fieldCodec, error) {
	switch format {
	case "", FormatBinary:
		return &binaryCodec{}, nil
	case FormatString:
		return &stringCodec{}, nil
	case FormatJSON:
		if schemaSpec == "" {
			return nil, fmt.Errorf("%s json needs a schema: --%s-schema 'id BIGINT, name STRING' (Spark DDL), a JSON Schema, an Avro schema, @file or a file path",
				flag, strings.TrimSuffix(strings.TrimPrefix(flag, "--"), "-format"))
		}
		s, err := schema.Load(schemaSpec)
		if err != nil {
			return nil, fmt.Errorf("%s-schema: %w", strings.TrimSuffix(flag, "-format"), err)
		}
		c := &jsonCodec{schema: s}
		// Compile once now so a schema the decoder cannot take is a usage error.
		if err := c.open(memory.NewGoAllocator()); err != nil {
			return nil, fmt.Errorf("%s-schema: %w", strings.TrimSuffix(flag, "-format"), err)
		}
		c.release()
		return c, nil
	case FormatAvro:
		return newAvroCodec(strings.TrimSuffix(strings.TrimPrefix(flag, "--"), "-format"), schemaSpec, reg)
	}
	return nil, fmt.Errorf("%s must be binary, string, json or avro, got %q", flag, format)
}

// schemaFor returns the output schema for the given key and value codecs.
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
	bad        int64    // records whose key or value did not decode
	badFile    *badFile // --bad-records-output, nil when not given
	badLogged  int
	log        func(msg string, args ...any)
	scratch    []byte
	cur        *kgo.Record   // the record add is decoding
	lastTopic  string        // topic of the last record (to reserve the next batch's topic bytes)
	srcFn      func() string // b.srcName, bound once (a method value per record would allocate)
	// notUTF8Warned: partitions whose json text that is not UTF-8 was logged (warnNotUTF8).
	notUTF8Warned map[TP]bool
}

func newBuilder(mem memory.Allocator, schema *arrow.Schema, keyC, valC fieldCodec) (*builder, error) {
	b := &builder{schema: schema, keyC: keyC, valC: valC}
	b.srcFn = b.srcName
	if err := keyC.open(mem); err != nil {
		return nil, err
	}
	if err := valC.open(mem); err != nil {
		keyC.release()
		return nil, err
	}
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
	return b, nil
}

// srcName renders the current record's topic/partition@offset, the "_file" of its rescued
// data; only records with rescued data or bad ones pay for it.
func (b *builder) srcName() string {
	r := b.cur
	s := append(b.scratch[:0], r.Topic...)
	s = append(s, '/')
	s = strconv.AppendInt(s, int64(r.Partition), 10)
	s = append(s, '@')
	s = strconv.AppendInt(s, r.Offset, 10)
	return string(s)
}

func (b *builder) add(r *kgo.Record) error {
	b.cur = r
	bk, err := b.keyC.append(r.Key, b.srcFn)
	if err != nil {
		return err
	}
	bv, err := b.valC.append(r.Value, b.srcFn)
	if err != nil {
		return err
	}
	b.warnNotUTF8(r)
	b.topic.Append(r.Topic)
	b.lastTopic = r.Topic
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
		if bk != "" || bv != "" {
			src := b.srcName()
			b.bad++
			b.rescued.BinaryBuilder.Append(b.rescue(r, src, bk, bv))
			if err := b.badRecord(r, src, bk, bv); err != nil {
				return err
			}
		} else {
			b.rescued.AppendNull()
		}
	}
	b.rows++
	return nil
}

// rescue renders the rescued-data object of a record whose key or value did not decode
// (codec/rescue layout): the raw bytes as text when they are UTF-8, else base64 under
// "<key|value>_base64", the reasons under "_error", and the source topic/partition@offset
// under "_file".
func (b *builder) rescue(r *kgo.Record, src, badKey, badVal string) []byte {
	s := b.scratch[:0]
	s = append(s, '{')
	add := func(name string, raw []byte) {
		if utf8.Valid(raw) {
			s = rescue.AppendQuoted(append(rescue.AppendQuoted(s, name), ':'), string(raw))
		} else {
			s = append(rescue.AppendQuoted(s, name+"_base64"), ':', '"')
			s = base64.StdEncoding.AppendEncode(s, raw)
			s = append(s, '"')
		}
		s = append(s, ',')
	}
	var why []string
	if badKey != "" {
		add(ColKey, r.Key)
		why = append(why, "key: "+badKey)
	}
	if badVal != "" {
		add(ColValue, r.Value)
		why = append(why, "value: "+badVal)
	}
	s = append(rescue.AppendQuoted(s, "_error"), ':')
	s = rescue.AppendQuoted(s, strings.Join(why, "; "))
	s = append(append(s, ','), `"`+rescue.SourceKey+`":`...)
	s = rescue.AppendQuoted(s, src)
	s = append(s, '}')
	b.scratch = s
	return s
}

// logBad is how many bad records are logged one by one (the rest are counted).
const logBad = 10

// badRecord logs the first few bad records and writes each to --bad-records-output.
func (b *builder) badRecord(r *kgo.Record, src, badKey, badVal string) error {
	var why []string
	if badKey != "" {
		why = append(why, "key: "+badKey)
	}
	if badVal != "" {
		why = append(why, "value: "+badVal)
	}
	reason := strings.Join(why, "; ")
	if b.badLogged < logBad && b.log != nil {
		b.badLogged++
		dest := "_rescued_data (--bad-records-output PATH also keeps them in a file)"
		if b.badFile != nil {
			dest = "_rescued_data and " + b.badFile.out.Path()
		}
		b.log("bad record", "at", src, "reason", reason, "to", dest)
		if b.badLogged == logBad {
			b.log("further bad records are only counted (bad_records in the progress line)")
		}
	}
	if b.badFile == nil {
		return nil
	}
	return b.badFile.write(r, reason, badKey != "", badVal != "")
}

// finish returns the rows added so far as a batch (nil when none) and resets the builder.
func (b *builder) finish() arrow.RecordBatch {
	if b.rows == 0 {
		return nil
	}
	cols := []arrow.Array{b.keyC.finish(), b.valC.finish(), b.topic.NewArray(), b.part.NewArray(), b.off.NewArray(),
		b.ts.NewArray(), b.tsType.NewArray(), b.hdrs.NewArray()}
	if b.rescued != nil {
		cols = append(cols, b.rescued.NewArray())
	}
	rec := array.NewRecordBatch(b.schema, cols, int64(b.rows))
	for _, c := range cols {
		c.Release()
	}
	// Reserve the next batch at this one's size rather than growing by doubling.
	for _, x := range []array.Builder{b.topic, b.part, b.off, b.ts, b.tsType} {
		x.Reserve(b.rows)
	}
	b.topic.ReserveData(b.rows * len(b.lastTopic))
	b.rows = 0
	return rec
}

func (b *builder) release() {
	b.keyC.release()
	b.valC.release()
	for _, x := range []array.Builder{b.topic, b.part, b.off, b.ts, b.tsType, b.hdrs} {
		x.Release()
	}
	if b.rescued != nil {
		b.rescued.Release()
	}
}
