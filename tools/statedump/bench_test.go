package statedump

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"testing"

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
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Run(context.Background(), Config{Dir: dir, Stage: "dedup", Format: "arrow"}, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	fmt.Fprint(io.Discard)
}
