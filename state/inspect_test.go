package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestReconstructMatchesRestore(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	d, _ := Open(dir, "x", "x", nil)
	defer d.Close()
	s := NewStore[counter](counterCodec{})
	s.SnapshotEvery = 4
	for ep := uint64(1); ep <= 9; ep++ {
		mutate(s.Put, s.Delete, ep)
		if err := s.Checkpoint(mem, d, ep, nil); err != nil {
			t.Fatal(err)
		}
	}
	for ep := uint64(1); ep <= 9; ep++ {
		tbl, err := Reconstruct(mem, dir, ep)
		if err != nil {
			t.Fatal(err)
		}
		want := expected(ep)
		if int(tbl.Rec.NumRows()) != len(want) {
			t.Fatalf("epoch %d: %d rows, want %d", ep, tbl.Rec.NumRows(), len(want))
		}
		got := map[string]counter{}
		cols := tbl.Rec.Columns()[2:]
		keys := tbl.Rec.Column(1).(*array.Binary)
		for i := 0; i < int(tbl.Rec.NumRows()); i++ {
			v, _ := counterCodec{}.Decode(cols, i)
			got[keys.ValueString(i)] = v
		}
		if !sortedKeys(keys) {
			t.Fatalf("epoch %d: rows not sorted by key", ep)
		}
		tbl.Release()
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("epoch %d key %s: got %v, want %v", ep, k, got[k], v)
			}
		}
	}
}

func sortedKeys(k *array.Binary) bool {
	for i := 1; i < k.Len(); i++ {
		if k.ValueString(i-1) >= k.ValueString(i) {
			return false
		}
	}
	return true
}

func benchKeys() int {
	if v, err := strconv.Atoi(os.Getenv("STATE_BENCH_KEYS")); err == nil {
		return v
	}
	return 10_000_000
}

// BenchmarkReconstruct measures state-dump's reconstruction of a large snapshot (default 10M
// keys; STATE_BENCH_KEYS overrides) and reports rows/s.
func BenchmarkReconstruct(b *testing.B) {
	n := benchKeys()
	mem := memory.NewGoAllocator()
	dir := b.TempDir()
	d, _ := Open(dir, "x", "x", nil)
	s := NewStore[counter](counterCodec{})
	for i := 0; i < n; i++ {
		s.Put(fmt.Sprintf("user-%010d", i), counter{N: int64(i), Label: "x"})
	}
	if err := s.Checkpoint(mem, d, 1, nil); err != nil {
		b.Fatal(err)
	}
	d.Close()
	s = nil
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tbl, err := Reconstruct(mem, dir, 1)
		if err != nil {
			b.Fatal(err)
		}
		tbl.Release()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkInspect1000Epochs measures the summary of a directory with 1,000 retained epochs.
func BenchmarkInspect1000Epochs(b *testing.B) {
	mem := memory.NewGoAllocator()
	dir := b.TempDir()
	d, _ := Open(dir, "x", "x", nil)
	s := NewStore[counter](counterCodec{})
	s.SnapshotEvery = 100
	for ep := uint64(1); ep <= 1000; ep++ {
		s.Put(fmt.Sprint(ep), counter{N: int64(ep)})
		s.Checkpoint(mem, d, ep, nil)
		d.WriteOffsets(ep, []byte(fmt.Sprintf(`{"next":%d}`, ep)))
		WriteCommit(dir, ep, "b")
	}
	d.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sum, err := Inspect(dir)
		if err != nil || len(sum.Epochs) != 1000 {
			b.Fatal(err, len(sum.Epochs))
		}
	}
}

// checkpointed writes epochs 1..n of a counter store with a snapshot every 4 epochs.
func checkpointed(t *testing.T, n uint64) string {
	t.Helper()
	mem := memory.NewGoAllocator()
	dir := t.TempDir()
	d, err := Open(dir, "x", "x", map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := NewStore[counter](counterCodec{})
	s.SnapshotEvery = 4
	for ep := uint64(1); ep <= n; ep++ {
		mutate(s.Put, s.Delete, ep)
		if err := s.Checkpoint(mem, d, ep, nil); err != nil {
			t.Fatal(err)
		}
		if err := WriteCommit(dir, ep, "test"); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestInspectMissingStateFile: a state file missing while its manifest is there is reported
// with its path; an epoch whose manifest is gone as well (collected) is simply not listed.
func TestInspectMissingStateFile(t *testing.T) {
	dir := checkpointed(t, 6)
	cl := filepath.Join(dir, StateDir, EpochName(6)+".changelog.arrow")
	os.Remove(cl)
	s, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Errors) != 1 || !strings.Contains(s.Errors[0], cl) || s.Epochs[len(s.Epochs)-1].Error == "" {
		t.Fatalf("errors %v, epochs %+v", s.Errors, s.Epochs)
	}
	os.Remove(filepath.Join(dir, StateDir, EpochName(6)+".json"))
	s, _ = Inspect(dir)
	if len(s.Errors) != 0 || s.Epochs[len(s.Epochs)-1].Entries != nil {
		t.Fatalf("a collected epoch: errors %v, last epoch %+v", s.Errors, s.Epochs[len(s.Epochs)-1])
	}
}

// TestReconstructRefusesGap: a changelog epoch missing between the snapshot and the epoch
// asked for is ErrNoState naming it, never a state silently lacking its changes.
func TestReconstructRefusesGap(t *testing.T) {
	dir := checkpointed(t, 7) // snapshots at 1 and 4
	os.Remove(filepath.Join(dir, StateDir, EpochName(6)+".json"))
	_, err := Reconstruct(memory.NewGoAllocator(), dir, 7)
	if !errors.Is(err, ErrNoState) || !strings.Contains(err.Error(), "epoch 6") {
		t.Fatalf("got %v, want ErrNoState for epoch 6", err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tbl, err := Reconstruct(mem, dir, 5)
	if err != nil {
		t.Fatal(err)
	}
	tbl.Release()
}
