// Package avrorow decodes Avro-encoded records (Kafka keys and values) into Arrow columns:
// plain Avro binary with a given schema, or the Confluent wire format (magic byte 0, a 4-byte
// big-endian schema id, then Avro binary) whose writer schema a schema registry supplies,
// resolved into the reader schema by the Avro specification's schema resolution (Resolve).
//
// Decoding uses github.com/linkedin/goavro/v2 (maintained by LinkedIn, already used by
// codec/formats for Avro files); the Arrow type of a schema is codec/schema.AvroType's
// mapping: records → struct, arrays → list, maps → map<string, V>, ["null", T] → nullable T,
// other unions → struct of one nullable member per branch, enums → string, fixed →
// fixed_size_binary, bytes → binary, decimal → decimal128 (decimal256 above 38 digits), date →
// date32, timestamp-millis/-micros → timestamp[µs, UTC], local-timestamp-* → zone-less
// timestamp[µs], uuid → string. The wire-format header is read and written with franz-go's
// sr.ConfluentHeader (github.com/twmb/franz-go/pkg/sr, the registry client read-kafka and
// write-kafka use).
package avrorow

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/streamkit/streamkit/codec/schema"
)

// Magic is the first byte of the Confluent wire format.
const Magic = 0

// WireHeader is the length of the Confluent wire format header (magic byte + schema id).
const WireHeader = 5

// Lookup returns the writer schema (Avro JSON) registered under a schema id; its error is the
// reason records with that id cannot be decoded (unknown id, registry unreachable, not Avro).
type Lookup func(id uint32) (string, error)

// LoadSchema reads an Avro schema given on the command line: inline JSON (text with '{', '['
// or '"'), "@path" or a plain file path (e.g. order.avsc).
func LoadSchema(spec string) (string, error) {
	if strings.HasPrefix(spec, "@") || !strings.ContainsAny(spec, "{[\"") {
		b, err := os.ReadFile(strings.TrimPrefix(spec, "@"))
		if err != nil && !strings.HasPrefix(spec, "@") {
			if _, derr := schema.ParseDDL(spec); derr == nil {
				return "", fmt.Errorf("avro schema: %q is a Spark DDL column list, not an Avro schema: give the Avro schema (JSON) inline, as @file or as a file path (order.avsc)", spec)
			}
		}
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
	return spec, nil
}

// Schema is a compiled Avro schema: the goavro codec, the node tree and the Arrow type.
type Schema struct {
	Doc      string         // the schema document as given
	Codec    *goavro.Codec  // goavro's codec (resolution path, encoding)
	Node     *Node          // the compiled node tree
	Type     arrow.DataType // schema.AvroType of Doc: the column type values decode to
	Nullable bool           // the schema admits null (a union with null)
}

// ParseSchema compiles an Avro schema document (JSON). Errors name what is wrong with it.
func ParseSchema(doc string) (*Schema, error) {
	c, err := goavro.NewCodec(doc)
	if err != nil {
		return nil, fmt.Errorf("avro schema: %w", err)
	}
	n, err := Compile([]byte(doc))
	if err != nil {
		return nil, err
	}
	t, nullable, err := schema.AvroType([]byte(doc))
	if err != nil {
		return nil, err
	}
	return &Schema{Doc: doc, Codec: c, Node: n, Type: t, Nullable: nullable}, nil
}

// Decoder appends Avro-encoded values to one Arrow column of the reader schema's type. With a
// Lookup it reads the Confluent wire format and resolves each writer schema (cached per id)
// into the reader schema; without one it reads plain Avro binary written with the reader
// schema. A value that does not decode leaves a null and returns the reason; nothing panics on
// bad input. Not safe for concurrent use.
type Decoder struct {
	reader  *Schema
	lookup  Lookup
	b       array.Builder
	mu      sync.Mutex
	writers map[uint32]*writer
}

type writer struct {
	codec *goavro.Codec
	res   Resolver // nil: same schema as the reader
	err   error
}

// NewDecoder returns a decoder for reader schema r; lookup nil means plain Avro binary.
func NewDecoder(r *Schema, lookup Lookup) *Decoder {
	return &Decoder{reader: r, lookup: lookup, writers: map[uint32]*writer{}}
}

// Reader is the reader schema.
func (d *Decoder) Reader() *Schema { return d.reader }

// Open creates the column builder.
func (d *Decoder) Open(mem memory.Allocator) { d.b = array.NewBuilder(mem, d.reader.Type) }

// AppendNull appends a null (a Kafka tombstone or absent key).
func (d *Decoder) AppendNull() { d.b.AppendNull() }

// Append decodes one value and appends it; on failure it appends a null and returns the
// reason ("" when the value decoded). Data written with the reader schema itself takes the
// direct path (direct.go); data of another writer schema is decoded by goavro and resolved.
func (d *Decoder) Append(b []byte) string {
	bad, _ := d.appendValue(b, false)
	return bad
}

// AppendStrict is Append, except for a value (Confluent wire format) whose writer schema the
// reader schema cannot resolve: that is a configuration error rather than a bad value, so it
// appends a null and returns a *ResolveError (Spark's from_avro FAILFAST mode; Append is its
// PERMISSIVE mode). The error is the same for every later value of that schema id.
func (d *Decoder) AppendStrict(b []byte) (bad string, err error) { return d.appendValue(b, true) }

// ResolveError reports a writer schema that the reader schema cannot resolve (the Avro
// specification's "Schema Resolution": a reader field without a default that the writer lacks,
// types that neither match nor promote, enum or record names that differ...). Err names the
// first field that does not resolve as a path from the record root ($.user.id).
type ResolveError struct {
	WriterID uint32 // the writer schema's registry id
	Err      error
}

func (e *ResolveError) Error() string {
	return "writer schema cannot be resolved to the reader schema: " + e.Err.Error()
}

func (e *ResolveError) Unwrap() error { return e.Err }

func (d *Decoder) appendValue(b []byte, strict bool) (string, error) {
	data, w := b, (*writer)(nil)
	if d.lookup != nil {
		n, rest, err := confluent.DecodeID(b)
		if err != nil {
			return d.bad(badHeader(b)), nil
		}
		id := uint32(n)
		w = d.writer(id)
		if w.err != nil {
			var re *ResolveError
			if strict && errors.As(w.err, &re) {
				d.b.AppendNull()
				return "", re
			}
			return d.bad(fmt.Sprintf("schema id %d: %v", id, w.err)), nil
		}
		data = rest
	}
	if w == nil || w.res == nil {
		r := rd{buf: data}
		if err := d.reader.Node.check(&r); err != nil {
			return d.bad("bad avro data: " + err.Error()), nil
		}
		if r.pos != len(data) {
			return d.bad(fmt.Sprintf("bad avro data: %d bytes left after the datum", len(data)-r.pos)), nil
		}
		r.pos = 0
		d.reader.Node.fill(&r, d.b)
		return "", nil
	}
	return d.appendResolved(w.codec, w.res, data), nil
}

// confluent reads and writes the Confluent wire-format header (franz-go's pkg/sr).
var confluent sr.ConfluentHeader

// badHeader says why b is not in the Confluent wire format (confluent.DecodeID refused it).
func badHeader(b []byte) string {
	if len(b) < WireHeader {
		return fmt.Sprintf("not Confluent wire format: %d bytes, shorter than the 5-byte header", len(b))
	}
	return fmt.Sprintf("not Confluent wire format: magic byte 0x%02x (want 0x00)", b[0])
}

func (d *Decoder) bad(why string) string {
	d.b.AppendNull()
	return why
}

// appendResolved decodes data with codec (goavro), resolves it with res (nil: none) and
// appends it.
func (d *Decoder) appendResolved(codec *goavro.Codec, res Resolver, data []byte) string {
	v, rest, err := codec.NativeFromBinary(data)
	if err != nil {
		return d.bad("bad avro data: " + err.Error())
	}
	if len(rest) > 0 {
		return d.bad(fmt.Sprintf("bad avro data: %d bytes left after the datum", len(rest)))
	}
	if res != nil {
		if v, err = res(v); err != nil {
			return d.bad("avro schema resolution: " + err.Error())
		}
	}
	if err := d.reader.Node.validate(v); err != nil {
		return d.bad("bad avro data: " + err.Error())
	}
	// The codec produced v for this very schema (or the resolver for the reader's), so
	// appending cannot fail short of a mapping bug; still, report instead of panicking.
	if err := d.reader.Node.AppendTo(d.b, v); err != nil {
		return "avro value does not fit the reader schema: " + err.Error()
	}
	return ""
}

// writer returns the cached writer schema of id (looked up once; a lookup error is kept for
// the decoder's lifetime unless Forget is called).
func (d *Decoder) writer(id uint32) *writer {
	d.mu.Lock()
	defer d.mu.Unlock()
	if w, ok := d.writers[id]; ok {
		return w
	}
	w := &writer{}
	doc, err := d.lookup(id)
	if err != nil {
		w.err = err
		if !Permanent(err) {
			return w // not cached: the next record asks again
		}
	} else if c, err := goavro.NewCodec(doc); err != nil {
		w.err = fmt.Errorf("writer schema: %w", err)
	} else if c.CanonicalSchema() == d.reader.Codec.CanonicalSchema() {
		w.codec = c
	} else if wn, err := Compile([]byte(doc)); err != nil {
		w.err = fmt.Errorf("writer schema: %w", err)
	} else if res, err := Resolve(wn, d.reader.Node); err != nil {
		w.err = &ResolveError{WriterID: id, Err: err}
	} else {
		w.codec, w.res = c, res
	}
	d.writers[id] = w
	return w
}

// PermanentError marks a Lookup error that will not change by asking again (unknown id, not an
// Avro schema): the decoder remembers it instead of asking once per record.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent reports whether err is (or wraps) a *PermanentError.
func Permanent(err error) bool {
	for err != nil {
		if _, ok := err.(*PermanentError); ok {
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

// NewArray returns the column built so far and resets the builder.
func (d *Decoder) NewArray() arrow.Array { return d.b.NewArray() }

// Release frees the builder.
func (d *Decoder) Release() {
	if d.b != nil {
		d.b.Release()
		d.b = nil
	}
}
