package checkpoint

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/state"
	"github.com/streamkit/streamkit/window"
)

// The schema of large-value rows: an id, an event time and a large string.
var bigSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "s", Type: arrow.BinaryTypes.String},
}, nil)

// bigValue is the string of id: size bytes that name the id.
func bigValue(id, size int) string {
	p := fmt.Sprintf("%08d", id)
	return strings.Repeat(p, size/len(p))
}

// bigBatch holds ids lo..hi-1 at lo..hi-1 seconds after base, each with a value of size bytes.
func bigBatch(mem memory.Allocator, lo, hi, size int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, bigSchema)
	defer b.Release()
	for id := lo; id < hi; id++ {
		b.Field(0).(*array.Int64Builder).Append(int64(id))
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(window.Micros(base.Add(time.Duration(id) * time.Second))))
		b.Field(2).(*array.StringBuilder).Append(bigValue(id, size))
	}
	return b.NewRecordBatch()
}

func newBigManager(t *testing.T, mem memory.Allocator, batchBytes int) *window.Manager {
	t.Helper()
	asg, _ := window.NewTumbling(24*time.Hour, 0, time.UTC)
	aggs, err := window.ParseAggs("first(s) as s, count")
	if err != nil {
		t.Fatal(err)
	}
	m, err := window.New(bigSchema, window.Config{Assigner: asg, Key: []string{"id"}, Time: "ts", Aggs: aggs, Mem: mem,
		Changelog: true, BatchBytes: batchBytes, Watermark: window.WatermarkOptions{Generate: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Release)
	return m
}

// stateBatches returns the rows of each record batch of the state file fi, and the largest
// data size of a batch (the sum of its buffers).
func stateBatches(t *testing.T, mem memory.Allocator, path string, fi *state.FileInfo) (rows []int64, largest int) {
	t.Helper()
	r, err := state.OpenStateFile(mem, path, *fi)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatchAt(i)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, rec.NumRows())
		size := 0
		for _, c := range rec.Columns() {
			for _, b := range c.Data().Buffers() {
				if b != nil {
					size += b.Len()
				}
			}
		}
		largest = max(largest, size)
		rec.Release()
	}
	return rows, largest
}

// TestStateBatchesByBytes: window state of large values (first(s) of 64 KiB strings) is
// written in record batches cut by bytes, snapshots and changelogs alike, so that state of
// any size fits Arrow's 2 GiB per string array (issue #17: a snapshot of 2.3 GB panicked with
// "slice bounds out of range" in every run, restarts included). A restore reads the many
// batches of the snapshot and the changelogs and fires the same windows as the manager that
// never stopped; output batches are cut by bytes as well.
func TestStateBatchesByBytes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const size, limit = 64 << 10, 1 << 20 // 16 values per batch of 1 MiB
	dirPath := t.TempDir()
	d, err := state.Open(dirPath, "window", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	live := newBigManager(t, mem, limit)
	st := &Store{M: live, SnapshotEvery: 2}
	// epoch 1: snapshot + changelog of 100 ids; epoch 2: a snapshot of 200; epoch 3: a
	// changelog of 100 more (restored on top of the epoch-2 snapshot).
	for epoch, ids := range [][2]int{{0, 100}, {100, 200}, {200, 300}} {
		rec := bigBatch(mem, ids[0], ids[1], size)
		if _, err := live.Process(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		if err := st.Checkpoint(mem, d, uint64(epoch+1)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		epoch      uint64
		snapshot   bool
		rows, want int64
	}{{1, false, 100, 7}, {1, true, 100, 7}, {2, true, 200, 13}, {3, false, 100, 7}} {
		man, err := state.ReadManifest(dirPath, c.epoch)
		if err != nil {
			t.Fatal(err)
		}
		fi := man.Changelog
		if c.snapshot {
			fi = man.Snapshot
		}
		rows, largest := stateBatches(t, mem, dirPath, fi)
		var total int64
		for _, n := range rows {
			total += n
		}
		if total != c.rows || int64(len(rows)) != c.want || largest > limit+size+4096 {
			t.Errorf("%s: batches of %v rows (largest %d bytes), want %d batches of %d rows in all, each ≤ %d bytes",
				fi.File, rows, largest, c.want, c.rows, limit+size)
		}
	}
	restored := newBigManager(t, mem, limit)
	if err := (&Store{M: restored}).Restore(mem, filepath.Clean(dirPath), 3); err != nil {
		t.Fatal(err)
	}
	if got := restored.Stats().Windows; got != 300 {
		t.Fatalf("restored %d windows, want 300", got)
	}
	var got, want []string
	for _, c := range []struct {
		m   *window.Manager
		out *[]string
	}{{live, &want}, {restored, &got}} {
		c.m.Final()
		outs := c.m.TakeOutput()
		if len(outs) < 300*size/limit {
			t.Errorf("output in %d batches, want them cut at %d bytes", len(outs), limit)
		}
		for _, r := range outs {
			for i := 0; i < int(r.NumRows()); i++ {
				s := r.Column(3).(*array.String).Value(i)
				*c.out = append(*c.out, fmt.Sprintf("%s %d %d", r.Column(2).ValueStr(i), len(s), r.Column(4).(*array.Int64).Value(i)))
				if id := r.Column(2).(*array.Int64).Value(i); s != bigValue(int(id), size) {
					t.Errorf("id %d: first(s) is not its value", id)
				}
			}
			r.Release()
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if len(got) != 300 || !slices.Equal(got, want) {
		t.Errorf("restored manager fired %d rows, the live one %d; first differences: %v", len(got), len(want), firstDiff(got, want))
	}
}

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("got %q, want %q", got[i], want[i])
		}
	}
	return "one is a prefix of the other"
}
