package dedup

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/stage"
)

var benchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.Binary},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// splitmix64 is a counter-based generator: benchKey(i) is the same 16 random-looking bytes on
// every call, so duplicates of resident keys can be made without keeping them.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func benchKey(dst []byte, i uint64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, splitmix64(2*i))
	return binary.BigEndian.AppendUint64(dst, splitmix64(2*i+1))
}

// benchBatch builds a batch of 16-byte binary keys: key(ids[r]) for each row.
func benchBatch(mem memory.Allocator, ids []uint64) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, benchSchema)
	defer b.Release()
	kb := b.Field(0).(*array.BinaryBuilder)
	vb := b.Field(1).(*array.Int64Builder)
	kb.Reserve(len(ids))
	kb.ReserveData(16 * len(ids))
	var key [16]byte
	for _, id := range ids {
		kb.Append(benchKey(key[:0], id))
		vb.Append(int64(id))
	}
	return b.NewRecordBatch()
}

func benchEnv(mem memory.Allocator) *stage.Env {
	return &stage.Env{Mem: mem, Now: time.Now, Stats: &stage.Stats{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// cpuTime is the process's user + system CPU time (all threads: GC workers included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// memInUse returns the live Go heap and the process's resident memory (Linux; 0 elsewhere),
// after a collection that returns freed heap pages to the OS.
func memInUse() (heap, rss uint64) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			pages, _ := strconv.ParseUint(f[1], 10, 64)
			rss = pages * uint64(os.Getpagesize())
		}
	}
	return ms.HeapAlloc, rss
}

// BenchmarkDedupResident measures dedup's Process with DEDUP_BENCH_KEYS (default 10M)
// distinct 16-byte binary keys resident in its state; each timed batch of 64Ki rows is half
// duplicates of resident keys (random), half new keys. It reports records/s of wall time and
// per CPU-second, and the memory per resident key: growth of the Go heap and of the process's
// resident memory (the store's arrays are off-heap on Linux), measured after a collection with
// the input batches released.
//
//	go test ./tools/dedup -run '^$' -bench DedupResident -benchtime 5000000x
//
// residentState is the operator of BenchmarkDedupResident, filled once per process (the
// testing package runs a benchmark function more than once).
type residentOp struct {
	d              *Dedup
	keys, next     uint64
	heapB, rssB    float64 // memory growth per key while filling
	fillRecsPerCPU float64
}

var residentState residentOp

func BenchmarkDedupResident(b *testing.B) {
	resident := uint64(10_000_000)
	if v, err := strconv.Atoi(os.Getenv("DEDUP_BENCH_KEYS")); err == nil {
		resident = uint64(v)
	}
	const batchRows = 64 * 1024
	mem := memory.NewGoAllocator()
	ctx := context.Background()
	emit := func(rec arrow.RecordBatch) error { rec.Release(); return nil }
	rs := &residentState
	if rs.d == nil || rs.keys != resident {
		if rs.d != nil {
			rs.d.Close()
			rs.d = nil
		}
		heap0, rss0 := memInUse()
		d, err := New(Config{Key: []string{"id"}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.Open(ctx, benchEnv(mem), benchSchema); err != nil {
			b.Fatal(err)
		}
		ids := make([]uint64, 0, batchRows)
		next := uint64(0)
		cpu0 := cpuTime()
		for next < resident {
			ids = ids[:0]
			for len(ids) < batchRows && next < resident {
				ids = append(ids, next)
				next++
			}
			rec := benchBatch(mem, ids)
			if err := d.Process(ctx, rec, emit); err != nil {
				b.Fatal(err)
			}
			rec.Release()
		}
		fill := cpuTime() - cpu0
		heap1, rss1 := memInUse()
		keys := float64(d.store.Len())
		*rs = residentOp{d: d, keys: resident, next: next, heapB: float64(heap1-heap0) / keys,
			rssB: float64(rss1-rss0) / keys, fillRecsPerCPU: keys / fill.Seconds()}
	}
	// Timed input, prepared up front: half new keys, half duplicates of resident keys.
	var batches []arrow.RecordBatch
	rng := uint64(1)
	for rows := 0; rows < b.N; rows += batchRows {
		ids := make([]uint64, 0, batchRows)
		for r := 0; r < batchRows && rows+r < b.N; r++ {
			if r%2 == 0 {
				ids = append(ids, rs.next)
				rs.next++
			} else {
				rng = splitmix64(rng)
				ids = append(ids, rng%resident)
			}
		}
		batches = append(batches, benchBatch(mem, ids))
	}
	cpu0 := cpuTime()
	b.ResetTimer()
	for _, rec := range batches {
		if err := rs.d.Process(ctx, rec, emit); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	for _, rec := range batches {
		rec.Release()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(b.N)/cpu.Seconds(), "records/cpu-s")
	b.ReportMetric(rs.fillRecsPerCPU, "fill-records/cpu-s")
	b.ReportMetric(rs.heapB, "heapB/key")
	b.ReportMetric(rs.rssB, "rssB/key")
	b.ReportMetric(0, "ns/op")
}
