package state

import (
	"fmt"
	"strings"
	"testing"
)

// TestStoreBatchesByBytes: a store of large keys and values (dedup by a 1 MiB string column)
// writes its snapshots and changelogs in record batches cut by bytes, so that state of any
// size fits Arrow's 2 GiB per binary array (issue #17: dedup stopped with "state file batch:
// keys exceed 2147483647 bytes"); Restore and Reconstruct read the many batches back.
func TestStoreBatchesByBytes(t *testing.T) {
	mem, dir, d := openTestDir(t, "dedup", map[string]string{"key": "s"})
	const size, limit = 64 << 10, 512 << 10 // 6 keys of 64 KiB with labels of 32 KiB per batch; snapshots > 4 MiB
	key := func(i int) string { return strings.Repeat(fmt.Sprintf("%07d", i), size/7) }
	s := NewStore[counter](counterCodec{})
	s.BatchBytes = limit
	s.SnapshotEvery = 2
	// epoch 1: 40 keys (snapshot and changelog); epoch 2: 40 more and 10 deletes (snapshot of
	// 70); epoch 3: 30 updates (changelog).
	for ep := 1; ep <= 3; ep++ {
		switch ep {
		case 1, 2:
			for i := (ep - 1) * 40; i < ep*40; i++ {
				s.Put(key(i), counter{N: int64(i), Label: key(i)[:size/2]})
			}
		case 3:
			for i := 40; i < 70; i++ {
				s.Put(key(i), counter{N: int64(-i), Label: "updated"})
			}
		}
		if ep == 2 {
			for i := 0; i < 10; i++ {
				s.Delete(key(i))
			}
		}
		if err := s.Checkpoint(mem, d, uint64(ep), nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		ep         uint64
		snapshot   bool
		rows, want int
	}{{1, true, 40, 7}, {2, false, 50, 8}, {2, true, 70, 12}, {3, false, 30, 4}} {
		m, err := ReadManifest(dir, c.ep)
		if err != nil {
			t.Fatal(err)
		}
		fi := m.Changelog
		if c.snapshot {
			fi = m.Snapshot
		}
		r, err := OpenStateFile(mem, dir, *fi)
		if err != nil {
			t.Fatal(err)
		}
		var rows []int64
		total := 0
		for i := 0; i < r.NumRecords(); i++ {
			rec, err := r.RecordBatchAt(i)
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, rec.NumRows())
			total += int(rec.NumRows())
			rec.Release()
		}
		r.Close()
		if total != c.rows || len(rows) != c.want {
			t.Errorf("%s: batches of %v rows, want %d rows in %d batches", fi.File, rows, c.rows, c.want)
		}
	}
	r := NewStore[counter](counterCodec{})
	if _, err := r.Restore(mem, dir, 3); err != nil {
		t.Fatal(err)
	}
	tbl, err := Reconstruct(mem, dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if r.Len() != 70 || tbl.Rec.NumRows() != 70 {
		t.Fatalf("restored %d keys, reconstructed %d, want 70", r.Len(), tbl.Rec.NumRows())
	}
	for i := 0; i < 80; i++ {
		v, ok := r.Get(key(i))
		want := counter{N: int64(i), Label: key(i)[:size/2]}
		if 40 <= i && i < 70 {
			want = counter{N: int64(-i), Label: "updated"}
		}
		if ok != (i >= 10) || ok && v != want {
			t.Errorf("key %d: got %v %v, want %v %v", i, v.N, ok, want.N, i >= 10)
		}
	}
}
