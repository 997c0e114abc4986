package statedump

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/state"
)

type firstSeen struct{}

func (firstSeen) Fields() []arrow.Field {
	return []arrow.Field{{Name: "first_seen", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true}}
}
func (firstSeen) Append(bs []array.Builder, v int64) {
	bs[0].(*array.TimestampBuilder).Append(arrow.Timestamp(v))
}
func (firstSeen) Decode(cols []arrow.Array, i int) (int64, error) { return 0, nil }

// BenchmarkDumpArrow dumps a dedup-shaped state (int64 key, first_seen) of N keys (default
// 10M; STATE_BENCH_KEYS overrides) as an Arrow IPC stream, key decoding included.
func BenchmarkDumpArrow(b *testing.B) {
	n := 10_000_000
	if v, err := strconv.Atoi(os.Getenv("STATE_BENCH_KEYS")); err == nil {
		n = v
	}
	dir := b.TempDir() + "/dedup"
	d, err := state.Open(dir, "dedup", "dedup", map[string]string{"key": "id"})
	if err != nil {
		b.Fatal(err)
	}
	s := state.NewStore[int64](firstSeen{})
	key := make([]byte, 9)
	for i := 0; i < n; i++ {
		key[0] = 1 // int tag
		binary.BigEndian.PutUint64(key[1:], uint64(i))
		s.Put(string(key), int64(i)*1000)
	}
	if err := s.Checkpoint(memory.NewGoAllocator(), d, 1, nil); err != nil {
		b.Fatal(err)
	}
	state.WriteCommit(dir, 1, "bench")
	d.Close()
	s = nil
	runtime.GC()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Run(context.Background(), Config{Dir: dir, Stage: "dedup", Format: "arrow"}, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	rows := float64(n) * float64(b.N)
	b.ReportMetric(rows/b.Elapsed().Seconds(), "rows/s")
	// Rows per second of CPU (user + system, GC workers included): the figure that does not
	// depend on what else a shared machine runs.
	b.ReportMetric(rows/(cpuTime()-cpu0).Seconds(), "rows/cpu-s")
}

// BenchmarkSummary1000Epochs renders the summary (table and JSON) of a dedup-shaped stage
// directory with 1,000 retained epochs (offsets, state manifests and changelogs, commit
// markers), end to end through Run.
func BenchmarkSummary1000Epochs(b *testing.B) {
	mem := memory.NewGoAllocator()
	dir := b.TempDir() + "/dedup"
	d, err := state.Open(dir, "dedup", "dedup", map[string]string{"key": "id"})
	if err != nil {
		b.Fatal(err)
	}
	s := state.NewStore[int64](firstSeen{})
	s.SnapshotEvery = 100
	key := make([]byte, 9)
	key[0] = 1
	for ep := uint64(1); ep <= 1000; ep++ {
		binary.BigEndian.PutUint64(key[1:], ep)
		s.Put(string(key), int64(ep))
		if err := s.Checkpoint(mem, d, ep, json.RawMessage(fmt.Sprintf(`{"watermark_us":%d}`, ep*1000))); err != nil {
			b.Fatal(err)
		}
		d.WriteOffsets(ep, []byte(fmt.Sprintf(`{"next":%d}`, ep)))
		state.WriteCommit(dir, ep, "bench")
	}
	d.Close()
	for _, f := range []string{FormatTable, FormatJSON} {
		b.Run(f, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := Run(context.Background(), Config{Dir: dir, Format: f}, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cpuTime is the process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
