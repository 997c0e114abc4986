package state

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/streamkit/streamkit/internal/s3test"
	"github.com/streamkit/streamkit/storage"
)

// bucketDir is a checkpoint location in a fresh bucket of the real S3 test server.
func bucketDir(t *testing.T, sub string) string {
	t.Helper()
	s3test.Server(t)
	return "s3://" + s3test.Bucket(t) + "/ckpt/" + sub
}

// TestBucketCheckpoint opens, checkpoints, commits and restores a stage directory on a bucket,
// and reads it back with the state-dump functions (Inspect, Reconstruct).
func TestBucketCheckpoint(t *testing.T) {
	loc := bucketDir(t, "dedup")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d, err := Open(loc, "dedup", "dedup", map[string]string{"key": "id"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Path != loc || d.Store().LocalDir() != "" {
		t.Fatalf("path %q local %q", d.Path, d.Store().LocalDir())
	}
	s := NewStore[counter](counterCodec{})
	s.SnapshotEvery = 3
	want := map[string]counter{}
	for ep := uint64(1); ep <= 5; ep++ {
		if err := d.WriteOffsets(ep, []byte(fmt.Sprintf(`{"next":%d}`, ep*10))); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 7; k++ {
			key := fmt.Sprintf("k%d", (int(ep)+k)%9)
			v, _ := s.Get(key)
			v.N++
			v.Label = fmt.Sprint("e", ep)
			s.Put(key, v)
		}
		s.Delete(fmt.Sprint("k", ep))
		if err := s.Checkpoint(mem, d, ep, map[string]any{"watermark": ep}); err != nil {
			t.Fatal(err)
		}
		if ep <= 4 {
			if err := WriteCommit(loc, ep, "print"); err != nil {
				t.Fatal(err)
			}
		}
		if ep == 4 {
			s.Range(func(k string, v counter) bool { want[k] = v; return true })
		}
	}
	// A second writer of epoch 5's offsets (a zombie) loses: put-if-absent, never replaced.
	if err := d.WriteOffsets(5, []byte(`{"next":0}`)); !errors.Is(err, storage.ErrExist) {
		t.Fatalf("second offsets of epoch 5: %v", err)
	}
	// A commit marker already there counts as written.
	if err := WriteCommit(loc, 4, "print"); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// Restart: the released lease is free at once; the options are checked against the bucket.
	if _, err := Open(loc, "dedup", "dedup", map[string]string{"key": "other"}); !isIncompatible(err) {
		t.Fatalf("other options: %v", err)
	}
	d, err = Open(loc, "dedup", "dedup", map[string]string{"key": "id"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, err := d.Committed()
	if err != nil || c != 4 {
		t.Fatalf("committed %d, %v", c, err)
	}
	if err := DiscardAfter(d.Path, c); err != nil {
		t.Fatal(err)
	}
	if eps, _ := Epochs(loc, StateDir); len(eps) != 4 || eps[3] != 4 {
		t.Fatalf("state epochs after discard: %v", eps)
	}
	pos, err := ReadOffsets(loc, 5)
	if err != nil || string(pos) != `{"next":50}` {
		t.Fatalf("offsets of 5: %s, %v", pos, err)
	}
	r := NewStore[counter](counterCodec{})
	man, err := r.Restore(mem, d.Path, c)
	if err != nil {
		t.Fatal(err)
	}
	if string(man.Extra) != `{"watermark":4}` || r.Len() != len(want) {
		t.Fatalf("restored extra %s, %d keys, want %d", man.Extra, r.Len(), len(want))
	}
	for k, v := range want {
		if got, ok := r.Get(k); !ok || got != v {
			t.Fatalf("key %s: %+v, want %+v", k, got, v)
		}
	}
	// Epoch 5 is rewritten by the new owner: its manifest was discarded, so the put succeeds.
	if err := r.Checkpoint(mem, d, 5, nil); err != nil {
		t.Fatal(err)
	}

	sum, err := Inspect(loc)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Committed != 4 || len(sum.Epochs) != 5 || len(sum.Errors) != 0 || sum.Meta == nil || sum.Meta.Options["key"] != "id" {
		t.Fatalf("summary: %+v", sum)
	}
	for _, e := range sum.Epochs {
		if e.Entries == nil || e.Offsets == nil || e.Time.IsZero() || e.Bytes == 0 {
			t.Fatalf("epoch %+v", e)
		}
	}
	tbl, err := Reconstruct(mem, loc, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if int(tbl.Rec.NumRows()) != len(want) {
		t.Fatalf("reconstructed %d rows, want %d", tbl.Rec.NumRows(), len(want))
	}
	root, _ := splitLocRoot(loc)
	if st, err := Stages(root); err != nil || len(st) != 1 || st[0] != "dedup" {
		t.Fatalf("stages of %s: %v %v", root, st, err)
	}
}

// splitLocRoot is the checkpoint root above a stage location.
func splitLocRoot(loc string) (string, string) { return splitLoc(loc) }

func isIncompatible(err error) bool {
	var ie *IncompatibleError
	return errors.As(err, &ie)
}

// TestBucketLease: a second owner of a bucket directory is refused with the holder's pid and
// host; once the first owner's lease is taken over, its writes fail instead of committing.
func TestBucketLease(t *testing.T) {
	t.Setenv("STREAMKIT_LEASE_TTL", "1500ms")
	loc := bucketDir(t, "window")
	d, err := Open(loc, "window", "window", map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, err = Open(loc, "window", "window", map[string]string{})
	var le *LockedError
	if !errors.As(err, &le) || le.Host == "" || le.PID == "" || !strings.Contains(err.Error(), "is locked by process") ||
		!strings.Contains(err.Error(), "lease expires") {
		t.Fatalf("second owner: %v", err)
	}
	if d.Held() != nil {
		t.Fatal(d.Held())
	}
	// Another process takes the next lease generation (as after a stall of this one): this
	// one's next renewal finds it taken and the lease is lost.
	st := d.Store()
	ents, err := st.ReadDir(context.Background(), LeaseFile)
	if err != nil || len(ents) == 0 {
		t.Fatalf("lease objects: %v %v", ents, err)
	}
	var last int64
	for _, e := range ents {
		fmt.Sscanf(e.Name, "%d.json", &last)
	}
	// Take a few generations ahead so that whichever renewal comes next collides.
	for g := last + 1; g <= last+3; g++ {
		st.PutIfAbsent(context.Background(), fmt.Sprintf("%s/%020d.json", LeaseFile, g),
			[]byte(fmt.Sprintf(`{"owner":"other","host":"h","pid":1,"renewedMs":%d,"ttlMs":60000}`, time.Now().UnixMilli())))
	}
	select {
	case <-d.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the lease was not lost")
	}
	if err := d.WriteOffsets(1, nil); err == nil || !strings.Contains(err.Error(), "lost its lease") {
		t.Fatalf("write after loss: %v", err)
	}
	if err := WriteManifest(d, Manifest{Epoch: 1}); err == nil {
		t.Fatal("manifest written after the lease was lost")
	}
	if eps, _ := Epochs(loc, OffsetsDir); len(eps) != 0 {
		t.Fatalf("offsets written after loss: %v", eps)
	}
}

// TestLocations: joining and naming locations keeps URLs intact (no "s3:/" folding) and their
// query after the path.
func TestLocations(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Join("s3://b/ckpt", "dedup"), "s3://b/ckpt/dedup"},
		{Join("s3://b/ckpt/?region=x", "dedup", "commits"), "s3://b/ckpt/dedup/commits?region=x"},
		{Join("/tmp/a/", "b"), "/tmp/a/b"},
		{WithSuffix("s3://b/ckpt/dedup/", ".shard-1"), "s3://b/ckpt/dedup.shard-1"},
		{WithSuffix("/tmp/x/", ".shard-0"), "/tmp/x.shard-0"},
		{Base("s3://b/ckpt/dedup?region=x"), "dedup"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if d, n := splitLoc("s3://b/c/commits/1.json?region=x"); d != "s3://b/c/commits?region=x" || n != "1.json" {
		t.Errorf("split: %q %q", d, n)
	}
}
