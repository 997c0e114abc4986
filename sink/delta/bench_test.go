package delta

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/streamkit/streamkit/delta"
	"github.com/streamkit/streamkit/internal/peertest"
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
			tbl := delta.NewTable(b.TempDir(), mem)
			p, m, err := delta.NewTableMetadata(flightsSchema, delta.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			w, err := NewDataWriter(tbl.Store(), m, WriterOptions{Allocator: mem, Compression: codec})
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
			if _, err := tbl.Commit(context.Background(), delta.CommitRequest{Protocol: p, Metadata: m, Adds: adds}); err != nil {
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

// BenchmarkWriteFlights3M measures the data writer alone (conform, Delta stats, Parquet with
// snappy, fsync; no commit) on the real rows of vega-datasets' flights-3m.parquet (3M rows:
// date timestamp, delay, distance, origin, destination; fetched once by peertest.VegaFile,
// or $STREAMKIT_FLIGHTS) read into 64Ki-row batches beforehand. One op writes all 3M rows into
// one table directory (one writer: the tool spreads large epochs over parallel writers).
// Reported: rows/s, rows per CPU-second of the process (load-independent on a shared
// machine), bytes of Parquet per row.
//
//	go test -run '^$' -bench WriteFlights3M -benchtime 5x ./sink/delta
func BenchmarkWriteFlights3M(b *testing.B) {
	path := os.Getenv("STREAMKIT_FLIGHTS")
	if path == "" {
		path = peertest.VegaFile(b, "flights-3m.parquet")
	}
	mem := memory.DefaultAllocator
	batches, sc := readFlights(b, mem, path)
	defer func() {
		for _, r := range batches {
			r.Release()
		}
	}()
	var rows int64
	for _, r := range batches {
		rows += r.NumRows()
	}
	_, m, err := delta.NewTableMetadata(sc, delta.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w, err := NewDataWriter(delta.NewTable(b.TempDir(), nil).Store(), m, WriterOptions{Allocator: mem})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range batches {
			if err := w.Write(r); err != nil {
				b.Fatal(err)
			}
		}
		adds, err := w.Close()
		if err != nil {
			b.Fatal(err)
		}
		size = 0
		for _, a := range adds {
			size += a.Size
		}
	}
	b.StopTimer()
	n := float64(rows) * float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(n/(cpuTime()-cpu0).Seconds(), "rows/cpu-s")
	b.ReportMetric(float64(size)/float64(rows), "bytes/row")
}

// readFlights reads a flights Parquet file into 64Ki-row batches with the benchmark schema
// of scripts/py/delta_bench.py (timestamp[us] without zone, int64, strings).
func readFlights(b *testing.B, mem memory.Allocator, path string) ([]arrow.RecordBatch, *arrow.Schema) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		b.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, mem)
	if err != nil {
		b.Fatal(err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer rr.Release()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "date", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "delay", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "distance", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "origin", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "destination", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	ctx := compute.WithAllocator(context.Background(), mem)
	var out []arrow.RecordBatch
	for rr.Next() {
		rec := rr.RecordBatch()
		cols := make([]arrow.Array, len(sc.Fields()))
		for i, fd := range sc.Fields() {
			c, err := compute.CastArray(ctx, rec.Column(rec.Schema().FieldIndices(fd.Name)[0]), compute.SafeCastOptions(fd.Type))
			if err != nil {
				b.Fatalf("%s: %v", fd.Name, err)
			}
			cols[i] = c
		}
		out = append(out, array.NewRecordBatch(sc, cols, rec.NumRows()))
		for _, c := range cols {
			c.Release()
		}
	}
	if err := rr.Err(); err != nil {
		b.Fatal(err)
	}
	return out, sc
}

// cpuTime is the user + system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCommitEpoch measures the per-epoch overhead of an exactly-once sink: one small
// data file (1000 rows) plus a commit carrying a txn, with a checkpoint every 10 commits.
// The "empty" case commits only commitInfo + txn (an epoch without rows).
func BenchmarkCommitEpoch(b *testing.B) {
	for _, rows := range []int{0, 1000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			mem := memory.DefaultAllocator
			tbl := delta.NewTable(b.TempDir(), mem)
			p, m, err := delta.NewTableMetadata(flightsSchema, delta.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			res, err := tbl.Commit(context.Background(), delta.CommitRequest{Protocol: p, Metadata: m})
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
				var adds []delta.Add
				if rows > 0 {
					w, err := NewDataWriter(tbl.Store(), s.Metadata(), WriterOptions{Allocator: mem})
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
				res, err := tbl.Commit(context.Background(), delta.CommitRequest{Read: s, Adds: adds,
					Txn: &delta.Txn{AppID: "bench", Version: int64(i)}, Operation: "STREAMING UPDATE"})
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

// BenchmarkDictEncodeFlights measures the writer's dictionary building alone (dictEncode)
// on each eligible flights column, one row group of 16 batches (1 Mi rows) per operation;
// rows/cpu-s is the figure that holds on a shared machine.
func BenchmarkDictEncodeFlights(b *testing.B) {
	path := os.Getenv("STREAMKIT_FLIGHTS")
	if path == "" {
		path = peertest.VegaFile(b, "flights-3m.parquet")
	}
	batches, sc := readFlights(b, memory.DefaultAllocator, path)
	defer func() {
		for _, r := range batches {
			r.Release()
		}
	}()
	batches = batches[:16]
	for j, f := range sc.Fields() {
		b.Run(f.Name, func(b *testing.B) {
			chunks := make([]arrow.Array, len(batches))
			rows := 0
			for i, r := range batches {
				chunks[i] = r.Column(j)
				rows += int(r.NumRows())
			}
			var scratch []int32
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if d := dictEncode(chunks, rows, 1<<20, &scratch); d != nil {
					d.Release()
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(rows)*float64(b.N)/(cpuTime()-cpu0).Seconds(), "rows/cpu-s")
		})
	}
}
