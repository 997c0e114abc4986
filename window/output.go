package window

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
)

// output accumulates result rows in builders and cuts batches of at most max rows, or once
// they hold maxBytes (codec.BuilderBytes).
type output struct {
	schema   *arrow.Schema
	bld      *array.RecordBuilder
	start    *array.TimestampBuilder
	end      *array.TimestampBuilder
	keyB     []array.Builder
	aggB     []array.Builder
	emitB    *array.StringBuilder
	n, max   int
	maxBytes int
	size     codec.Sizer
	done     []arrow.RecordBatch
}

func newOutput(mem memory.Allocator, keys, aggs []arrow.Field, batchRows, batchBytes int) (*output, error) {
	if batchRows <= 0 {
		batchRows = 1 << 16
	}
	fields := []arrow.Field{
		{Name: ColWindowStart, Type: timestampUS},
		{Name: ColWindowEnd, Type: timestampUS},
	}
	fields = append(fields, keys...)
	fields = append(fields, aggs...)
	fields = append(fields, arrow.Field{Name: ColEmit, Type: arrow.BinaryTypes.String})
	seen := map[string]bool{}
	for _, f := range fields {
		if seen[f.Name] {
			return nil, fmt.Errorf("%w: output column %q appears twice (key or aggregate named like another column); rename the aggregate with 'as'", ErrConfig, f.Name)
		}
		seen[f.Name] = true
	}
	var md arrow.Metadata
	if len(keys) > 0 {
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i] = k.Name
		}
		md = arrow.NewMetadata([]string{"streamkit.key"}, []string{strings.Join(names, ",")})
	}
	s := arrow.NewSchema(fields, &md)
	o := &output{schema: s, bld: array.NewRecordBuilder(mem, s), max: batchRows, maxBytes: batchBytes}
	o.size = codec.NewSizer(o.bld.Fields())
	o.start = o.bld.Field(0).(*array.TimestampBuilder)
	o.end = o.bld.Field(1).(*array.TimestampBuilder)
	for i := range keys {
		o.keyB = append(o.keyB, o.bld.Field(2+i))
	}
	for i := range aggs {
		o.aggB = append(o.aggB, o.bld.Field(2+len(keys)+i))
	}
	o.emitB = o.bld.Field(len(fields) - 1).(*array.StringBuilder)
	return o, nil
}

func (o *output) row(m *Manager, s int32, kind string) {
	o.start.Append(arrow.Timestamp(m.sStart[s]))
	o.end.Append(arrow.Timestamp(m.sEnd[s]))
	if err := m.codec.Decode(unsafeBytes(m.keys[m.sKey[s]].key), o.keyB); err != nil {
		panic(fmt.Sprintf("window: decode own key: %v", err))
	}
	m.aggs.AppendResults(s, o.aggB)
	o.emitB.Append(kind)
	o.n++
	if o.n >= o.max || o.size.Bytes(o.n) >= o.maxBytes {
		o.cut()
	}
}

func (o *output) cut() {
	if o.n == 0 {
		return
	}
	o.done = append(o.done, o.bld.NewRecordBatch())
	o.n = 0
}

func (o *output) take() []arrow.RecordBatch {
	o.cut()
	d := o.done
	o.done = nil
	return d
}

func (o *output) release() {
	for _, r := range o.done {
		r.Release()
	}
	o.done = nil
	o.bld.Release()
}
