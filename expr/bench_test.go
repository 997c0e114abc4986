package expr

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// benchSchema is the 10-column schema of the transform benchmarks (and of make bench's
// transform workload, scripts/bench/prep.py transform): ints, doubles, strings, a timestamp.
var benchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "c", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "d", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, {Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "y", Type: arrow.PrimitiveTypes.Float64, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "t", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
}, nil)

// benchBatches is a 10-column stream of 1M rows in batches of 64Ki rows; row i holds the
// values scripts/bench/prep.py transform writes for it (b null every 97th row, s every 89th).
func benchBatches(b *testing.B) []arrow.RecordBatch {
	b.Helper()
	const total, per = 1 << 20, 1 << 16
	var out []arrow.RecordBatch
	words := []string{"Alpha", "BETA", "gamma", "Delta-Force", "epsilon"}
	for start := 0; start < total; start += per {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, benchSchema)
		for i := start; i < start+per; i++ {
			bld.Field(0).(*array.Int64Builder).Append(int64(i))
			bld.Field(1).(*array.Int64Builder).Append(int64(i % 1000))
			if i%97 == 0 {
				bld.Field(2).AppendNull()
			} else {
				bld.Field(2).(*array.Int64Builder).Append(int64(i * 7 % 10007))
			}
			bld.Field(3).(*array.Int32Builder).Append(int32(i % 97))
			bld.Field(4).(*array.Int32Builder).Append(int32(i % 13))
			bld.Field(5).(*array.Float64Builder).Append(float64(i) * 0.5)
			bld.Field(6).(*array.Float64Builder).Append(float64(i%100) / 3)
			if i%89 == 0 {
				bld.Field(7).AppendNull()
			} else {
				bld.Field(7).(*array.StringBuilder).Append(words[i%len(words)])
			}
			bld.Field(8).(*array.StringBuilder).Append(fmt.Sprintf("k%06d", i%5000))
			bld.Field(9).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i)*1_000_003))
		}
		out = append(out, bld.NewRecordBatch())
		bld.Release()
	}
	return out
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runBatches runs fn over every batch b.N times and reports rows per CPU-second of the
// process (getrusage: user + system, GC included).
func runBatches(b *testing.B, batches []arrow.RecordBatch, fn func(context.Context, arrow.RecordBatch, RowPos) (arrow.RecordBatch, error)) {
	ctx := context.Background()
	b.ResetTimer()
	start, rows := cpuTime(), 0
	for n := 0; n < b.N; n++ {
		for _, rec := range batches {
			out, err := fn(ctx, rec, nil)
			if err != nil {
				b.Fatal(err)
			}
			out.Release()
			rows += int(rec.NumRows())
		}
	}
	b.ReportMetric(float64(rows)/(cpuTime()-start).Seconds(), "rows/cpu-s")
}

// BenchmarkFilter: a simple predicate over the 10-column stream (Eval + FilterArray per
// column), as the filter tool runs it, without IPC.
func BenchmarkFilter(b *testing.B) {
	batches := benchBatches(b)
	p, err := CompilePredicate("a > 500 AND c < 50", batches[0].Schema(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	runBatches(b, batches, p.Filter)
}

// BenchmarkSelect: 5 computed columns (arithmetic, a cast, lower, date_trunc, substring).
func BenchmarkSelect(b *testing.B) {
	batches := benchBatches(b)
	p, err := CompileSelect("id, a * 2 + b AS ab, CAST(x AS BIGINT) AS xi, lower(s) AS ls, date_trunc('HOUR', ts) AS hr, substring(t, 2, 3) AS tk",
		batches[0].Schema(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	runBatches(b, batches, p.Eval)
}
