package jsonrow

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// benchInput returns n NDJSON records of about 100 bytes each.
func benchInput(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"id":%d,"user":"user%04d","amount":%d.%02d,"ts":"2024-03-01T12:%02d:%02d.123Z","ok":%t,"region":"eu-west"}`+"\n",
			i, i%10000, i%1000, i%100, i/60%60, i%60, i%2 == 0)
	}
	return b.Bytes()
}

// BenchmarkReader measures the line-stream path (NDJSON -> record batches); records/s is
// reported as rec/s.
func BenchmarkReader(b *testing.B) {
	const n = 100000
	data := benchInput(n)
	s := mustSchema(b, "id long, user string, amount double, ts timestamp, ok boolean, region string")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := NewReader(bytes.NewReader(data), s, ReaderOptions{Options: Options{Allocator: memory.NewGoAllocator()}})
		if err != nil {
			b.Fatal(err)
		}
		rows := 0
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			rows += int(rec.NumRows())
			rec.Release()
		}
		r.Release()
		if rows != n {
			b.Fatalf("rows %d", rows)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rec/s")
}

// BenchmarkAppend measures the per-value path read-kafka uses.
func BenchmarkAppend(b *testing.B) {
	data := benchInput(1000)
	lines := bytes.Split(bytes.TrimSpace(data), []byte{'\n'})
	s := mustSchema(b, "id long, user string, amount double, ts timestamp, ok boolean, region string")
	d, err := NewDecoder(s, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Release()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := d.Append(lines[i%len(lines)], Source{}); err != nil {
			b.Fatal(err)
		}
		if d.Len() == 1<<16 {
			d.NewRecordBatch().Release()
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rec/s")
}
