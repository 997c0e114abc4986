package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec/avrorow"
	"github.com/streamkit/streamkit/internal/schemaregistry"
)

// Field metadata keys of an Avro-decoded key or value column.
const (
	// MetaSchemaID is the registry id of the reader schema (set when it came from the registry).
	MetaSchemaID = "streamkit.schema_id"
	// MetaSchemaSubject and MetaSchemaVersion name the registry subject version it came from.
	MetaSchemaSubject = "streamkit.schema_subject"
	MetaSchemaVersion = "streamkit.schema_version"
	// MetaAvroSchema is the reader schema (Avro JSON) the column's values follow.
	MetaAvroSchema = "streamkit.avro_schema"
	// MetaWireFormat is "confluent" when values were read in the Confluent wire format, else
	// "plain" (Avro binary alone).
	MetaWireFormat = "streamkit.avro_wire_format"
)

// avroCodec decodes Avro keys or values with codec/avrorow into a column of the reader
// schema's type: plain Avro binary with the --key-schema/--value-schema reader schema, or with
// --schema-registry the Confluent wire format, each writer schema (by id, cached) resolved into
// the reader schema. Without a reader schema file the reader is the latest version of subject
// <topic>-key / <topic>-value (TopicNameStrategy) when the run opens.
type avroCodec struct {
	which  string // "key" or "value"
	reg    *schemaregistry.Client
	reader *avrorow.Schema
	meta   map[string]string
	dec    *avrorow.Decoder
	spec   string // --key-schema / --value-schema ("" : the registry's latest)
	rescue bool   // --on-schema-mismatch rescue
}

// Choices of --on-schema-mismatch: what an Avro key or value whose writer schema (Confluent
// wire format, by id) the reader schema cannot resolve does.
const (
	// SchemaMismatchFail (the default) fails the run at the first such record, naming both
	// schema ids and the field that does not resolve: a configuration error, as Spark's
	// from_avro mode FAILFAST.
	SchemaMismatchFail = "fail"
	// SchemaMismatchRescue leaves the column null and rescues the raw record with the reason,
	// as any bad record (Spark's PERMISSIVE).
	SchemaMismatchRescue = "rescue"
)

// setOnSchemaMismatch applies --on-schema-mismatch (mode) to the avro codecs among cs.
func setOnSchemaMismatch(mode string, cs ...fieldCodec) error {
	switch mode {
	case "", SchemaMismatchFail, SchemaMismatchRescue:
	default:
		return fmt.Errorf("--on-schema-mismatch must be fail or rescue, got %q", mode)
	}
	for _, c := range cs {
		if a, ok := c.(*avroCodec); ok {
			a.rescue = mode == SchemaMismatchRescue
		}
	}
	return nil
}

func newAvroCodec(which, spec string, reg *schemaregistry.Client) (*avroCodec, error) {
	c := &avroCodec{which: which, reg: reg, meta: map[string]string{}, spec: spec}
	if spec == "" {
		if reg == nil {
			return nil, fmt.Errorf("--%s-format avro needs --%s-schema FILE.avsc (plain Avro binary) or --schema-registry URL (Confluent wire format)", which, which)
		}
		return c, nil
	}
	doc, err := avrorow.LoadSchema(spec)
	if err != nil {
		return nil, fmt.Errorf("--%s-schema: %w", which, err)
	}
	if err := c.setReader(doc); err != nil {
		return nil, fmt.Errorf("--%s-schema: %w", which, err)
	}
	return c, nil
}

func (c *avroCodec) setReader(doc string) error {
	r, err := avrorow.ParseSchema(doc)
	if err != nil {
		return err
	}
	c.reader = r
	c.meta[MetaAvroSchema] = r.Codec.Schema()
	c.meta[MetaWireFormat] = "plain"
	if c.reg != nil {
		c.meta[MetaWireFormat] = "confluent"
	}
	return nil
}

// resolveReader fetches the latest schema of subject <topic>-<which> when no reader schema
// was given. A reader schema file that subject <topic>-<which> holds gets its id and version
// in the metadata too.
func (c *avroCodec) resolveReader(ctx context.Context, topics []string) error {
	if c.reader != nil {
		if c.reg != nil && len(topics) == 1 {
			subject := topics[0] + "-" + c.which
			if v, err := c.reg.Lookup(ctx, subject, c.reader.Doc); err == nil {
				c.setRegistered(v)
			}
		}
		return nil
	}
	if len(topics) != 1 {
		return fmt.Errorf("--%s-format avro without --%s-schema takes the reader schema from subject <topic>-%s, which needs exactly one topic (got %d: %s); give --%s-schema",
			c.which, c.which, c.which, len(topics), strings.Join(topics, ", "), c.which)
	}
	subject := topics[0] + "-" + c.which
	v, err := c.reg.Latest(ctx, subject)
	if err != nil {
		return fmt.Errorf("--%s-format avro: reader schema from subject %s: %w", c.which, subject, err)
	}
	if err := c.setReader(v.Schema); err != nil {
		return fmt.Errorf("--%s-format avro: subject %s version %d (id %d): %w", c.which, subject, v.Version, v.ID, err)
	}
	c.setRegistered(v)
	return nil
}

func (c *avroCodec) setRegistered(v schemaregistry.Version) {
	c.meta[MetaSchemaID] = strconv.FormatUint(uint64(v.ID), 10)
	c.meta[MetaSchemaSubject] = v.Subject
	c.meta[MetaSchemaVersion] = strconv.Itoa(v.Version)
}

func (c *avroCodec) field(name string) arrow.Field {
	if c.reader == nil { // until Open resolves it from the registry
		return arrow.Field{Name: name, Type: arrow.BinaryTypes.Binary, Nullable: true}
	}
	return arrow.Field{Name: name, Type: c.reader.Type, Nullable: true, Metadata: arrow.MetadataFrom(c.meta)}
}

func (c *avroCodec) open(mem memory.Allocator) error {
	if c.reader == nil {
		return fmt.Errorf("--%s-format avro: no reader schema", c.which)
	}
	var lookup avrorow.Lookup
	if c.reg != nil {
		lookup = func(id uint32) (string, error) {
			s, err := c.reg.SchemaByID(context.Background(), id)
			if err != nil && schemaregistry.Permanent(err) {
				return "", &avrorow.PermanentError{Err: err}
			}
			return s, err
		}
	}
	c.dec = avrorow.NewDecoder(c.reader, lookup)
	c.dec.Open(mem)
	return nil
}

func (c *avroCodec) append(b []byte, _ func() string) (string, error) {
	if b == nil {
		c.dec.AppendNull()
		return "", nil
	}
	if c.rescue || c.reg == nil {
		return c.dec.Append(b), nil
	}
	bad, err := c.dec.AppendStrict(b)
	var re *avrorow.ResolveError
	if errors.As(err, &re) {
		return "", c.mismatch(re)
	}
	return bad, err
}

// mismatch is the error of a writer schema that the reader schema cannot resolve.
func (c *avroCodec) mismatch(re *avrorow.ResolveError) error {
	reader := "the reader schema --" + c.which + "-schema " + c.spec
	if id, ok := c.meta[MetaSchemaID]; ok {
		reader = fmt.Sprintf("reader schema id %s (subject %s version %s", id, c.meta[MetaSchemaSubject], c.meta[MetaSchemaVersion])
		if c.spec == "" {
			reader += ", the latest when the run started)"
		} else {
			reader += ", --" + c.which + "-schema " + c.spec + ")"
		}
	}
	return fmt.Errorf("%s: writer schema id %d cannot be resolved to %s: %v; "+
		"this is a schema configuration error, not a bad record: register a compatible schema version, give a --%s-schema "+
		"that resolves every writer schema, or --on-schema-mismatch rescue to read on with such records null and rescued in %s",
		c.which, re.WriterID, reader, re.Err, c.which, ColRescued)
}

func (c *avroCodec) finish() arrow.Array { return c.dec.NewArray() }
func (c *avroCodec) release() {
	if c.dec != nil {
		c.dec.Release()
	}
}
func (*avroCodec) decodes() bool { return true }
