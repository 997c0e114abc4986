package generate

import (
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// benchGen measures rows per second into Arrow batches of 64Ki rows.
func benchGen(b *testing.B, ddl string, gens ...string) {
	g := mustGen(b, Options{Schema: mustSchema(b, ddl), Gens: gens, Seed: 1})
	mem := memory.NewGoAllocator()
	const batch = 64 * 1024
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	rows := int64(0)
	for i := 0; i < b.N; i++ {
		rec, err := g.Batch(mem, rows, batch)
		if err != nil {
			b.Fatal(err)
		}
		rec.Release()
		rows += batch
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds()/1e6, "Mrows/s")
	// Rows per CPU-second of the whole process (GC included): robust on a shared machine
	// where wall time also counts other processes' turns.
	b.ReportMetric(float64(rows)/(cpuTime()-cpu0).Seconds()/1e6, "Mrows/cpu-s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
}

// Five columns of numbers and short strings (the target: ≥ 10M rows/s per core).
func BenchmarkFiveColumns(b *testing.B) {
	benchGen(b, "id bigint, user int, amount double, ts timestamp, channel string",
		"id=sequence", "user=uniform(1, 100000)", "amount=uniform(0, 500)", "ts=timestamp(2024-01-01T00:00:00Z, 1000/s)",
		"channel=choice(web:6, mobile:3, api:1)")
}

// The same with skewed keys, a Gaussian, 10% nulls and duplicates' typical cost.
func BenchmarkFiveColumnsSkewed(b *testing.B) {
	benchGen(b, "id bigint, user int, amount double, ts timestamp, channel string",
		"id=sequence", "user=zipf(1.2, 1, 10000)", "amount=normal(100, 15) nulls=0.1", "ts=timestamp(2024-01-01T00:00:00Z, 1000/s, 2s)",
		"channel=words(1)")
}

func BenchmarkNexmarkBids(b *testing.B) {
	p := Presets["nexmark-bids"]
	benchGen(b, p.DDL, p.Gens...)
}

func BenchmarkUUIDNames(b *testing.B) {
	benchGen(b, "id string, name string", "id=uuid", "name=names")
}

func BenchmarkZipfLarge(b *testing.B) {
	benchGen(b, "k bigint", "k=zipf(1.1, 1, 100000000)")
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
