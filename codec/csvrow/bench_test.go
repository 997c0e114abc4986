package csvrow

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkReader reads ~60-byte rows of six typed columns; rows/s is reported as rec/s.
func BenchmarkReader(b *testing.B) {
	const n = 100000
	var in bytes.Buffer
	in.WriteString("id,user,amount,day,ok,region\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "%d,user%04d,%d.%02d,2024-03-%02d,%t,\"eu-west\"\n", i, i%10000, i%1000, i%100, i%28+1, i%2 == 0)
	}
	data := in.Bytes()
	s := mustSchema(b, "id long, user string, amount double, day date, ok boolean, region string")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := NewReader(bytes.NewReader(data), s, Options{Header: true, Allocator: memory.NewGoAllocator()})
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
