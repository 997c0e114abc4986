package kafka

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/streamkit/streamkit/codec/avrorow"
	"github.com/streamkit/streamkit/internal/schemaregistry"
	"github.com/streamkit/streamkit/stage"
)

// FormatAvro (--value-format avro, --key-format avro) writes Avro binary: of the value column
// (--value COL) or of the whole row as a record, and of the key column. The writer schema is
// --value-schema / --key-schema, or derived from the Arrow type (avrorow.FromArrow). With
// --schema-registry it is registered under subject <topic>-value / <topic>-key and records are
// written in the Confluent wire format (magic byte 0, 4-byte schema id, Avro binary).
const FormatAvro = "avro"

// avroOut encodes one record part (key or value).
type avroOut struct {
	which  string // key or value
	enc    *avrorow.Encoder
	schema string
	id     uint32 // registry id, 0 without a registry
}

// newAvroOut prepares the encoder for values of Arrow type t, registering the schema when
// reg is set.
func newAvroOut(ctx context.Context, which, spec string, t arrow.DataType, topic string, reg *schemaregistry.Client) (*avroOut, error) {
	var doc string
	var err error
	if spec != "" {
		if doc, err = avrorow.LoadSchema(spec); err != nil {
			return nil, stage.Usagef("write-kafka: --%s-schema: %v", which, err)
		}
	} else {
		name := "Row"
		if topic != "" {
			name = strings.ReplaceAll(topic, ".", "_") + "_" + which
		}
		if doc, err = avrorow.FromArrow(t, name); err != nil {
			return nil, stage.Usagef("write-kafka: --%s-format avro: %v (or give --%s-schema)", which, err, which)
		}
	}
	s, err := avrorow.ParseSchema(doc)
	if err != nil {
		return nil, stage.Usagef("write-kafka: --%s-schema: %v", which, err)
	}
	o := &avroOut{which: which, enc: avrorow.NewEncoder(s), schema: doc}
	if reg != nil {
		subject := topic + "-" + which
		if o.id, err = reg.Register(ctx, subject, doc); err != nil {
			return nil, fmt.Errorf("write-kafka: register the %s schema under subject %s: %w", which, subject, err)
		}
		o.enc.WithID(o.id)
	}
	return o, nil
}

// encodeAll encodes rows [0, n) of a (nil entries for rows isNull reports) before anything is
// produced, so a row that does not fit the schema stops the stage with nothing half-written.
func (o *avroOut) encodeAll(a arrow.Array, n int, isNull func(int) bool) ([][]byte, error) {
	out := make([][]byte, n)
	var buf []byte
	for i := 0; i < n; i++ {
		if isNull != nil && isNull(i) {
			continue
		}
		start := len(buf)
		var err error
		if buf, err = o.enc.Append(buf, a, i); err != nil {
			return nil, fmt.Errorf("write-kafka: row %d: --%s-format avro: %w", i, o.which, err)
		}
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out, nil
}
