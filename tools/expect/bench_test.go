package expect

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/codec"
	"github.com/streamkit/streamkit/stage"
)

// BenchmarkExpect runs expect over an IPC stream of 16 batches of 64Ki rows (id, amount with
// 1% nulls and 5% negative amounts), IPC read and write included, with two --expect and one
// --expect-or-drop; it reports rows per second.
func BenchmarkExpect(b *testing.B) {
	const batches, n = 16, 1 << 16
	var in bytes.Buffer
	w := codec.NewWriter(&in, rowSchema, memory.NewGoAllocator())
	for i := range batches {
		rb := array.NewRecordBuilder(memory.NewGoAllocator(), rowSchema)
		ids, amounts := rb.Field(0).(*array.Int64Builder), rb.Field(1).(*array.Int64Builder)
		for r := range n {
			v := int64(i*n + r)
			if v%100 == 0 {
				ids.AppendNull()
			} else {
				ids.Append(v)
			}
			if v%20 == 0 {
				amounts.Append(-v % 1000)
			} else {
				amounts.Append(v % 1000)
			}
		}
		rec := rb.NewRecordBatch()
		if err := w.Write(rec); err != nil {
			b.Fatal(err)
		}
		rec.Release()
		rb.Release()
	}
	w.WriteControl(codec.BarrierControl(1))
	w.WriteControl(codec.EndControl(codec.Final))
	w.Close()
	specs := []string{"warn has_id: id IS NOT NULL", "warn small: amount < 900 OR id % 7 = 0", "drop amount_ok: amount >= 0"}
	var es []Expectation
	for _, s := range specs {
		a, v, _ := strings.Cut(s, " ")
		e, err := ParseExpectation(Action(a), v)
		if err != nil {
			b.Fatal(err)
		}
		es = append(es, e)
	}
	b.ResetTimer()
	for range b.N {
		x, err := New(Config{Expectations: es})
		if err != nil {
			b.Fatal(err)
		}
		if err := stage.RunOperator(context.Background(), stage.Options{Tool: "expect", Stdin: bytes.NewReader(in.Bytes()),
			Stdout: io.Discard, Stderr: io.Discard, NoSignals: true, Progress: stage.ProgressOff}, x); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(batches*n*b.N)/b.Elapsed().Seconds(), "rows/s")
}
