package window

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sys/unix"
)

var benchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: tsUTC},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64},
}, nil)

var benchStrSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.BinaryTypes.String},
	{Name: "ts", Type: tsUTC},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// benchGen produces batches of rows with uniformly random keys among nkeys, event times
// advancing step µs per row with a little disorder (±jitter µs), and small integer values.
type benchGen struct {
	r      *rand.Rand
	nkeys  int
	t      int64
	step   int64
	jitter int64
	str    bool
	names  []string
}

func (g *benchGen) batch(mem memory.Allocator, n int) arrow.RecordBatch {
	s := benchSchema
	if g.str {
		s = benchStrSchema
	}
	b := array.NewRecordBuilder(mem, s)
	defer b.Release()
	tb := b.Field(1).(*array.TimestampBuilder)
	vb := b.Field(2).(*array.Int64Builder)
	tb.Reserve(n)
	vb.Reserve(n)
	if g.str {
		kb := b.Field(0).(*array.StringBuilder)
		for i := 0; i < n; i++ {
			kb.Append(g.names[g.r.IntN(g.nkeys)])
		}
	} else {
		kb := b.Field(0).(*array.Int64Builder)
		kb.Reserve(n)
		for i := 0; i < n; i++ {
			kb.UnsafeAppend(int64(g.r.IntN(g.nkeys)))
		}
	}
	for i := 0; i < n; i++ {
		g.t += g.step
		j := int64(0)
		if g.jitter > 0 {
			j = g.r.Int64N(g.jitter)
		}
		tb.UnsafeAppend(arrow.Timestamp(g.t - j))
		vb.UnsafeAppend(int64(g.r.IntN(100)))
	}
	return b.NewRecordBatch()
}

func newBenchGen(nkeys int, str bool) *benchGen {
	g := &benchGen{r: rand.New(rand.NewPCG(7, 11)), nkeys: nkeys, t: 1_700_000_000_000_000, step: 10, jitter: 100_000, str: str}
	if str {
		for i := 0; i < nkeys; i++ {
			g.names = append(g.names, fmt.Sprintf("sensor-%07d", i))
		}
	}
	return g
}

// runBench feeds b.N rows (in batches of 64Ki, generated outside the timer) through a manager
// and reports records per second.
func runBench(b *testing.B, asg *Assigner, spec string, nkeys int, str bool) {
	aggs, err := ParseAggs(spec)
	if err != nil {
		b.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	s := benchSchema
	if str {
		s = benchStrSchema
	}
	m, err := New(s, Config{Assigner: asg, Key: []string{"k"}, Time: "ts", Aggs: aggs, Mem: mem,
		Watermark: WatermarkOptions{Generate: true, Delay: time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Release()
	g := newBenchGen(nkeys, str)
	// warm up: every key has open windows
	for i := 0; i < 4; i++ {
		rec := g.batch(mem, 1<<16)
		if _, err := m.Process(rec); err != nil {
			b.Fatal(err)
		}
		rec.Release()
		release(m.TakeOutput())
	}
	const batch = 1 << 16
	b.ReportAllocs()
	runtime.LockOSThread() // thread CPU time = this goroutine's work
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	var elapsed, cpu time.Duration
	outRows := 0
	for done := 0; done < b.N; done += batch {
		n := min(batch, b.N-done)
		b.StopTimer()
		rec := g.batch(mem, n)
		b.StartTimer()
		t0, c0 := time.Now(), threadCPU()
		if _, err := m.Process(rec); err != nil {
			b.Fatal(err)
		}
		for _, o := range m.TakeOutput() {
			outRows += int(o.NumRows())
			o.Release()
		}
		elapsed += time.Since(t0)
		cpu += threadCPU() - c0
		b.StopTimer()
		rec.Release()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rec/s")
	b.ReportMetric(float64(b.N)/cpu.Seconds(), "rec/cpu-s") // per core, whatever else runs
	st := m.Stats()
	b.ReportMetric(float64(st.Windows), "open-windows")
	_ = outRows
}

// threadCPU returns the CPU time consumed by the calling OS thread.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Event time advances 10 µs per record (100K records per event-time second) with up to
// 100 ms of disorder; 1 s watermark delay.
func BenchmarkTumblingCountSum100K(b *testing.B) {
	asg, _ := NewTumbling(10*time.Second, 0, nil)
	runBench(b, asg, "count, sum(v)", 100_000, false)
}

func BenchmarkTumblingCountSum100KStringKeys(b *testing.B) {
	asg, _ := NewTumbling(10*time.Second, 0, nil)
	runBench(b, asg, "count, sum(v)", 100_000, true)
}

func BenchmarkSlidingCountSum100K(b *testing.B) {
	asg, _ := NewSliding(10*time.Second, time.Second, 0, nil)
	runBench(b, asg, "count, sum(v)", 100_000, false)
}

func BenchmarkSessionCount100K(b *testing.B) {
	asg, _ := NewSession(2 * time.Second)
	runBench(b, asg, "count, sum(v)", 100_000, false)
}

func BenchmarkTumblingAllAggs10K(b *testing.B) {
	asg, _ := NewTumbling(10*time.Second, 0, nil)
	runBench(b, asg, "count, sum(v), min(v), max(v), avg(v), first(v), last(v), count_distinct(v)", 10_000, false)
}

// BenchmarkStateBytes measures Go heap bytes per open (key, window) entry: 100K keys with one
// open tumbling window each, count and sum.
func BenchmarkStateBytes(b *testing.B) {
	for _, spec := range []string{"count, sum(v)", "count, sum(v), avg(v), min(v), max(v)"} {
		b.Run(spec, func(b *testing.B) {
			// one measurement, whatever b.N is
			b.ReportMetric(stateBytes(b, spec, 100_000), "B/window-key")
		})
	}
}

func stateBytes(b *testing.B, spec string, nkeys int) float64 {
	aggs, _ := ParseAggs(spec)
	asg, _ := NewTumbling(time.Hour, 0, nil)
	mem := memory.NewGoAllocator()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := New(benchSchema, Config{Assigner: asg, Key: []string{"k"}, Time: "ts", Aggs: aggs, Mem: mem,
		Watermark: WatermarkOptions{Generate: true}})
	if err != nil {
		b.Fatal(err)
	}
	g := newBenchGen(nkeys, false)
	g.jitter = 0
	for done := 0; done < nkeys; done += 1 << 14 {
		bld := array.NewRecordBuilder(mem, benchSchema)
		for i := done; i < min(done+1<<14, nkeys); i++ {
			bld.Field(0).(*array.Int64Builder).Append(int64(i))
			bld.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(g.t))
			bld.Field(2).(*array.Int64Builder).Append(1)
		}
		rec := bld.NewRecordBatch()
		bld.Release()
		if _, err := m.Process(rec); err != nil {
			b.Fatal(err)
		}
		rec.Release()
	}
	// drop per-batch scratch so only state remains
	m.enc, m.ts, m.ok, m.rows, m.slots = EncodedKeys{}, nil, nil, nil, nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	if w := m.Stats().Windows; w != nkeys {
		b.Fatalf("%d windows, want %d", w, nkeys)
	}
	per := float64(after.HeapAlloc-before.HeapAlloc) / float64(nkeys)
	runtime.KeepAlive(m)
	return per
}
