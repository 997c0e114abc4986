package state

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// counter is a test value: a count and a label.
type counter struct {
	N     int64
	Label string
}

type counterCodec struct{}

func (counterCodec) Fields() []arrow.Field {
	return []arrow.Field{
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
	}
}

func (counterCodec) Append(bs []array.Builder, v counter) {
	bs[0].(*array.Int64Builder).Append(v.N)
	bs[1].(*array.StringBuilder).Append(v.Label)
}

func (counterCodec) Decode(cols []arrow.Array, i int) (counter, error) {
	return counter{N: cols[0].(*array.Int64).Value(i), Label: cols[1].(*array.String).Value(i)}, nil
}

// openTestDir opens a checkpoint directory of tool (options opts) in a temporary directory,
// closed when the test ends, with an allocator that must then hold nothing.
func openTestDir(t *testing.T, tool string, opts map[string]string) (*memory.CheckedAllocator, string, *Dir) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	dir := t.TempDir()
	d, err := Open(dir, tool, tool, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return mem, dir, d
}

func TestStoreCheckpointRestore(t *testing.T) {
	mem, dir, d := openTestDir(t, "dedup", map[string]string{"key": "id"})
	s := NewStore[counter](counterCodec{})
	s.SnapshotEvery = 3
	want := map[uint64]map[string]counter{}
	for ep := uint64(1); ep <= 8; ep++ {
		for k := 0; k < 20; k++ {
			key := fmt.Sprintf("k%02d", (int(ep)*7+k)%25)
			v, _ := s.Get(key)
			v.N++
			v.Label = fmt.Sprintf("e%d", ep)
			s.Put(key, v)
		}
		s.Delete(fmt.Sprintf("k%02d", ep))
		if err := s.Checkpoint(mem, d, ep, map[string]any{"watermark": ep * 10}); err != nil {
			t.Fatal(err)
		}
		snap := map[string]counter{}
		s.Range(func(k string, v counter) bool { snap[k] = v; return true })
		want[ep] = snap
	}
	for ep := uint64(1); ep <= 8; ep++ {
		r := NewStore[counter](counterCodec{})
		man, err := r.Restore(mem, dir, ep)
		if err != nil {
			t.Fatalf("restore %d: %v", ep, err)
		}
		if string(man.Extra) != fmt.Sprintf(`{"watermark":%d}`, ep*10) {
			t.Fatalf("epoch %d extra: got %s", ep, man.Extra)
		}
		got := map[string]counter{}
		r.Range(func(k string, v counter) bool { got[k] = v; return true })
		if fmt.Sprint(got) != fmt.Sprint(want[ep]) {
			t.Fatalf("epoch %d: got %v, want %v", ep, got, want[ep])
		}
	}
	// Snapshots at the first checkpoint and every 3rd epoch.
	for _, ep := range []uint64{1, 3, 6} {
		m, _ := ReadManifest(dir, ep)
		if m.Snapshot == nil {
			t.Fatalf("epoch %d: no snapshot", ep)
		}
	}
}

// TestChangelogLeavesOutKeysBornAndDeleted: a key added and deleted within one epoch is in
// no state before or after it, so the epoch's changelog leaves it out; a key deleted and added
// again in the epoch stays in it, and the restored state is the store's.
func TestChangelogLeavesOutKeysBornAndDeleted(t *testing.T) {
	mem, dir, d := openTestDir(t, "dedup", nil)
	s := NewStore[counter](counterCodec{})
	s.SnapshotEvery = 100
	s.Put("a", counter{N: 1})
	s.Put("b", counter{N: 2})
	if err := s.Checkpoint(mem, d, 1, nil); err != nil {
		t.Fatal(err)
	}
	s.Put("c", counter{N: 3}) // born and deleted: left out
	s.Delete("c")
	s.Delete("a") // deleted: a delete row
	s.Put("d", counter{N: 4})
	s.Delete("d")
	s.Put("d", counter{N: 5}) // deleted and added again: an upsert row
	if err := s.Checkpoint(mem, d, 2, nil); err != nil {
		t.Fatal(err)
	}
	m, err := ReadManifest(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if m.Snapshot != nil || m.Changelog == nil || m.Changelog.Rows != 2 {
		t.Fatalf("epoch 2 manifest: snapshot %v, changelog %+v; want only a changelog of 2 rows (delete a, upsert d)", m.Snapshot, m.Changelog)
	}
	r := NewStore[counter](counterCodec{})
	if _, err := r.Restore(mem, dir, 2); err != nil {
		t.Fatal(err)
	}
	got := map[string]counter{}
	r.Range(func(k string, v counter) bool { got[k] = v; return true })
	if fmt.Sprint(got) != fmt.Sprint(map[string]counter{"b": {N: 2}, "d": {N: 5}}) {
		t.Fatalf("restored %v, want b and d", got)
	}
}

func TestCorruptFilesNamed(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	d, err := Open(dir, "window", "window", nil)
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore[counter](counterCodec{})
	for ep := uint64(1); ep <= 3; ep++ {
		s.Put(fmt.Sprint(ep), counter{N: int64(ep)})
		if err := s.Checkpoint(mem, d, ep, nil); err != nil {
			t.Fatal(err)
		}
		if err := WriteCommit(dir, ep, "test"); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	cases := []struct {
		name string
		file string
		mut  func([]byte) []byte
	}{
		{"truncated changelog", "state/" + EpochName(2) + ".changelog.arrow", func(b []byte) []byte { return b[:len(b)/2] }},
		{"flipped changelog byte", "state/" + EpochName(3) + ".changelog.arrow", func(b []byte) []byte { b[len(b)/2] ^= 1; return b }},
		{"truncated manifest", "state/" + EpochName(3) + ".json", func(b []byte) []byte { return b[:len(b)-10] }},
		{"altered manifest", "state/" + EpochName(3) + ".json", func(b []byte) []byte {
			return []byte(strings.Replace(string(b), `"entries":3`, `"entries":4`, 1))
		}},
		{"altered commit", "commits/" + EpochName(3) + ".json", func(b []byte) []byte {
			return []byte(strings.Replace(string(b), `"epoch":3`, `"epoch":9`, 1))
		}},
		{"empty snapshot", "state/" + EpochName(1) + ".snapshot.arrow", func([]byte) []byte { return nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.file)
			orig, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(p, orig, 0o644)
			os.WriteFile(p, c.mut(append([]byte(nil), orig...)), 0o644)
			var err2 error
			if strings.HasPrefix(c.file, "commits/") {
				_, err2 = Committed(dir)
			} else {
				_, err2 = NewStore[counter](counterCodec{}).Restore(mem, dir, 3)
			}
			var ce *CorruptError
			if !errors.As(err2, &ce) {
				t.Fatalf("got %v, want a CorruptError", err2)
			}
			if ce.Path != p || !strings.Contains(err2.Error(), p) {
				t.Fatalf("error %q does not name %s", err2, p)
			}
		})
	}
}

func TestIncompatibleOptions(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, "dedup", "dedup", map[string]string{"key": "id", "ttl": "1h"})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	_, err = Open(dir, "dedup", "dedup", map[string]string{"key": "user", "ttl": "1h", "event-time": "ts"})
	var ie *IncompatibleError
	if !errors.As(err, &ie) {
		t.Fatalf("got %v, want IncompatibleError", err)
	}
	for _, want := range []string{`key: checkpoint has "id", this run has "user"`, `event-time: checkpoint has none, this run has "ts"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	d, err = Open(dir, "dedup", "dedup", map[string]string{"ttl": "1h", "key": "id"})
	if err != nil {
		t.Fatalf("same options refused: %v", err)
	}
	d.Close()
}

// TestLockHeldByOtherProcess runs a child process that holds the directory and checks that
// Open here fails at once, naming the directory and the child's PID.
func TestLockHeldByOtherProcess(t *testing.T) {
	if os.Getenv("STATE_LOCK_CHILD") != "" {
		d, err := Open(os.Getenv("STATE_LOCK_CHILD"), "print", "print", nil)
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println("LOCKED")
		os.Stdin.Read(make([]byte, 1)) // hold until the parent closes our stdin
		d.Close()
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHeldByOtherProcess$")
	cmd.Env = append(os.Environ(), "STATE_LOCK_CHILD="+dir)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	if !strings.Contains(string(buf[:n]), "LOCKED") {
		t.Fatalf("child: %q", buf[:n])
	}
	_, err := Open(dir, "print", "print", nil)
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("got %v, want LockedError", err)
	}
	abs, _ := filepath.Abs(dir)
	if !strings.Contains(err.Error(), abs) || !strings.Contains(err.Error(), fmt.Sprint(cmd.Process.Pid)) {
		t.Fatalf("error %q should name %s and pid %d", err, abs, cmd.Process.Pid)
	}
	stdin.Close()
	cmd.Wait()
	d, err := Open(dir, "print", "print", nil)
	if err != nil {
		t.Fatalf("after the holder exited: %v", err)
	}
	d.Close()
}

func TestGC(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	d, _ := Open(dir, "dedup", "dedup", nil)
	defer d.Close()
	s := NewStore[counter](counterCodec{})
	s.SnapshotEvery = 4
	for ep := uint64(1); ep <= 20; ep++ {
		s.Put(fmt.Sprint(ep), counter{N: int64(ep)})
		s.Checkpoint(mem, d, ep, nil)
		d.WriteOffsets(ep, []byte(fmt.Sprintf(`{"n":%d}`, ep)))
		if ep <= 17 {
			WriteCommit(dir, ep, "t")
		}
		if err := d.GC(5); err != nil {
			t.Fatal(err)
		}
	}
	// committed 17, retain 5 → keep epochs 13..17 (+18..20 uncommitted); offsets of 12 hold the
	// start of 13; state back to the snapshot at 12.
	eps, _ := Epochs(dir, OffsetsDir)
	if eps[0] != 12 || eps[len(eps)-1] != 20 {
		t.Fatalf("offsets kept %v", eps)
	}
	st, _ := Epochs(dir, StateDir)
	if st[0] != 12 {
		t.Fatalf("state kept %v", st)
	}
	for _, ep := range []uint64{13, 17} {
		if _, err := NewStore[counter](counterCodec{}).Restore(mem, dir, ep); err != nil {
			t.Fatalf("restore %d after GC: %v", ep, err)
		}
	}
}

func BenchmarkChangelog1M(b *testing.B) {
	mem := memory.NewGoAllocator()
	dir := b.TempDir()
	d, _ := Open(dir, "bench", "bench", nil)
	defer d.Close()
	s := NewStore[counter](counterCodec{})
	s.SnapshotEvery = 1 << 62
	s.haveSnapshot = true
	keys := make([]string, 1_000_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("user-%09d", i)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for j, k := range keys {
			s.Put(k, counter{N: int64(j), Label: "x"})
		}
		b.StartTimer()
		if err := s.Checkpoint(mem, d, uint64(i+1), nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(keys))*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

// tsCodec is dedup's state value: a nullable microsecond timestamp (math.MinInt64 = null).
type tsCodec struct{}

func (tsCodec) Fields() []arrow.Field {
	return []arrow.Field{{Name: "first_seen", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true}}
}
func (tsCodec) Append(bs []array.Builder, v int64) {
	if v == math.MinInt64 {
		bs[0].AppendNull()
		return
	}
	bs[0].(*array.TimestampBuilder).Append(arrow.Timestamp(v))
}
func (tsCodec) Decode(cols []arrow.Array, i int) (int64, error) {
	if cols[0].IsNull(i) {
		return math.MinInt64, nil
	}
	return int64(cols[0].(*array.Timestamp).Value(i)), nil
}

// BenchmarkChangelogDedup is dedup's checkpoint in W3 (make bench): keys as codec.AppendRow
// encodes a 32-hex-digit string (tag, length, digits) with a
// timestamp, 1M live keys, each epoch inserts 100k new keys and expires the 100k oldest, so a
// changelog holds 100k upserts and 100k deletes; a full snapshot every DefaultSnapshotEvery
// epochs. The timed part is Checkpoint only.
func BenchmarkChangelogDedup(b *testing.B) {
	const live, perEpoch = 1_000_000, 100_000
	mem := memory.NewGoAllocator()
	dir := b.TempDir()
	d, _ := Open(dir, "bench", "bench", nil)
	defer d.Close()
	s := NewStore[int64](tsCodec{})
	next := 0
	add := func(n int) {
		for range n {
			s.Put(fmt.Sprintf("\x05\x20%016x%016x", uint64(next)*0x9E3779B97F4A7C15, uint64(next)), int64(next))
			next++
		}
	}
	add(live)
	if err := s.Checkpoint(mem, d, 1, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cut := int64(next - live + perEpoch)
		s.DeleteFunc(func(_ string, v int64) bool { return v < cut })
		add(perEpoch)
		b.StartTimer()
		if err := s.Checkpoint(mem, d, uint64(i+2), nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/epoch")
}
