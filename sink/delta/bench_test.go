package delta

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var flightsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "fl_date", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "dep_delay", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "arr_delay", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "origin", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "dest", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

var airports = []string{"ATL", "DFW", "DEN", "ORD", "LAX", "JFK", "LAS", "MCO", "MIA", "CLT", "SEA", "PHX", "EWR", "SFO", "IAH", "BOS"}

// flightsBatch builds n flights-like rows (deterministic).
func flightsBatch(mem memory.Allocator, seed, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, flightsSchema)
	defer b.Release()
	ts := b.Field(0).(*array.TimestampBuilder)
	dep := b.Field(1).(*array.Int64Builder)
	arr := b.Field(2).(*array.Int64Builder)
	org := b.Field(3).(*array.StringBuilder)
	dst := b.Field(4).(*array.StringBuilder)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	x := uint64(seed)*2654435761 + 1
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		ts.Append(arrow.Timestamp(base + int64(seed*n+i)*60_000_000))
		dep.Append(int64(x%180) - 20)
		if x%50 == 0 {
			arr.AppendNull()
		} else {
			arr.Append(int64(x%200) - 30)
		}
		org.Append(airports[x%16])
		dst.Append(airports[(x>>8)%16])
	}
	return b.NewRecordBatch()
}

// BenchmarkWriteFlights measures Arrow → Delta data file throughput (conform, stats,
// Parquet encode with snappy, fsync) for 64Ki-row batches, including the final commit.
func BenchmarkWriteFlights(b *testing.B) {
	for _, codec := range []string{"snappy", "zstd"} {
		b.Run(codec, func(b *testing.B) {
			mem := memory.DefaultAllocator
			const rows = 1 << 16
			batches := make([]arrow.RecordBatch, 8)
			for i := range batches {
				batches[i] = flightsBatch(mem, i, rows)
				defer batches[i].Release()
			}
			tbl := NewTable(b.TempDir(), mem)
			p, m, err := NewTableMetadata(flightsSchema, CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			w, err := NewDataWriter(tbl.Root(), m, WriterOptions{Allocator: mem, Compression: codec})
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				if err := w.Write(batches[i%len(batches)]); err != nil {
					b.Fatal(err)
				}
			}
			adds, err := w.Close()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tbl.Commit(context.Background(), CommitRequest{Protocol: p, Metadata: m, Adds: adds}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			var size int64
			for _, a := range adds {
				size += a.Size
			}
			b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(size)/float64(b.N*rows), "bytes/row")
		})
	}
}

// BenchmarkCommitEpoch measures the per-epoch overhead of an exactly-once sink: one small
// data file (1000 rows) plus a commit carrying a txn, with a checkpoint every 10 commits.
// The "empty" case commits only commitInfo + txn (an epoch without rows).
func BenchmarkCommitEpoch(b *testing.B) {
	for _, rows := range []int{0, 1000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			mem := memory.DefaultAllocator
			tbl := NewTable(b.TempDir(), mem)
			p, m, err := NewTableMetadata(flightsSchema, CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			res, err := tbl.Commit(context.Background(), CommitRequest{Protocol: p, Metadata: m})
			if err != nil {
				b.Fatal(err)
			}
			s := res.Snapshot
			var rec arrow.RecordBatch
			if rows > 0 {
				rec = flightsBatch(mem, 1, rows)
				defer rec.Release()
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var adds []Add
				if rows > 0 {
					w, err := NewDataWriter(tbl.Root(), s.Metadata(), WriterOptions{Allocator: mem})
					if err != nil {
						b.Fatal(err)
					}
					if err := w.Write(rec); err != nil {
						b.Fatal(err)
					}
					if adds, err = w.Close(); err != nil {
						b.Fatal(err)
					}
				}
				res, err := tbl.Commit(context.Background(), CommitRequest{Read: s, Adds: adds,
					Txn: &Txn{AppID: "bench", Version: int64(i)}, Operation: "STREAMING UPDATE"})
				if err != nil {
					b.Fatal(err)
				}
				if res.CheckpointErr != nil {
					b.Fatal(res.CheckpointErr)
				}
				s = res.Snapshot
			}
		})
	}
}
