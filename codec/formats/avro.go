package formats

import (
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/linkedin/goavro/v2"

	"github.com/streamkit/streamkit/codec/avrorow"
	"github.com/streamkit/streamkit/codec/schema"
)

// avroReader decodes an Avro object container file with goavro into Arrow batches. The Arrow
// schema is schema.FromAvro of the writer schema; values are converted by codec/avrorow's
// compiled schema walking beside the Arrow builders.
type avroReader struct {
	schema *arrow.Schema
	ocf    *goavro.OCFReader
	conv   *avrorow.Node
	sb     *array.StructBuilder
	max    int
}

func newAvroReader(r io.Reader, opts Options) (*avroReader, error) {
	ocf, err := goavro.NewOCFReader(r)
	if err != nil {
		return nil, fmt.Errorf("avro: %w", err)
	}
	doc := ocf.Codec().Schema()
	s, err := schema.FromAvro([]byte(doc))
	if err != nil {
		return nil, err
	}
	node, err := avrorow.Compile([]byte(doc))
	if err != nil {
		return nil, err
	}
	return &avroReader{
		schema: s, ocf: ocf, conv: node, max: opts.BatchRows,
		sb: array.NewStructBuilder(opts.Allocator, arrow.StructOf(s.Fields()...)),
	}, nil
}

func (a *avroReader) next() (arrow.RecordBatch, []int64, []int64, error) {
	n := 0
	for n < a.max && a.ocf.Scan() {
		v, err := a.ocf.Read()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("avro: record: %w", err)
		}
		if err := a.conv.AppendTo(a.sb, v); err != nil {
			return nil, nil, nil, fmt.Errorf("avro: record: %w", err)
		}
		n++
	}
	if err := a.ocf.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("avro: %w", err)
	}
	if n == 0 {
		return nil, nil, nil, io.EOF
	}
	sa := a.sb.NewStructArray()
	defer sa.Release()
	return array.RecordFromStructArray(sa, a.schema), nil, nil, nil
}

func (a *avroReader) release() { a.sb.Release() }
