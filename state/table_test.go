package state

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestStoreModel drives the compact store with random Put, PutIfAbsent(All), Delete, DeleteFunc
// and Range-with-Delete against a Go map, through checkpoints (changelogs and snapshots),
// compactions and restores of every epoch, also via Reconstruct (state-dump's reader).
func TestStoreModel(t *testing.T) {
	mem, dir, d := openTestDir(t, "dedup", nil)
	rng := rand.New(rand.NewPCG(1, 2))
	s := NewStore[counter](counterCodec{})
	s.SnapshotEvery = 4
	model := map[string]counter{}
	want := map[uint64]map[string]counter{}
	key := func() string {
		n := rng.IntN(3000)
		if n%97 == 0 {
			return fmt.Sprintf("long-%0200d", n) // multi-byte uvarint length
		}
		if n == 0 {
			return "" // the empty key
		}
		return fmt.Sprintf("k%d", n)
	}
	const epochs = 24
	for ep := uint64(1); ep <= epochs; ep++ {
		ops := 2000
		if ep%5 == 0 {
			ops = 20 // a quiet epoch
		}
		for i := 0; i < ops; i++ {
			k := key()
			switch op := rng.IntN(10); {
			case op < 4:
				v := counter{N: int64(i), Label: fmt.Sprint(ep)}
				s.Put(k, v)
				model[k] = v
			case op == 5 && i%2 == 0: // a batch, duplicates within it included
				keys := make([][]byte, 1+rng.IntN(40))
				for j := range keys {
					keys[j] = []byte(key())
				}
				calls := 0
				s.PutIfAbsentAll(keys, func(j int) counter {
					if j != calls {
						t.Fatalf("epoch %d: PutIfAbsentAll asked the value of key %d after %d puts", ep, j, calls)
					}
					return counter{N: -int64(i*100 + j)}
				}, func(j int, inserted bool) {
					k := string(keys[j])
					if _, had := model[k]; inserted == had {
						t.Fatalf("epoch %d: PutIfAbsentAll key %d (%q) inserted %v, key present %v", ep, j, k, inserted, had)
					} else if !had {
						model[k] = counter{N: -int64(i*100 + j)}
					}
					calls++
				})
				if calls != len(keys) {
					t.Fatalf("epoch %d: PutIfAbsentAll reported %d of %d keys", ep, calls, len(keys))
				}
			case op < 6:
				v := counter{N: -int64(i)}
				_, had := model[k]
				if got := s.PutIfAbsent([]byte(k), v); got == had {
					t.Fatalf("epoch %d: PutIfAbsent(%q) = %v, key present %v", ep, k, got, had)
				}
				if !had {
					model[k] = v
				}
			case op < 9:
				s.Delete(k)
				delete(model, k)
			default:
				v, ok := s.Get(k)
				if mv, mok := model[k]; ok != mok || v != mv {
					t.Fatalf("epoch %d: Get(%q) = %v %v, want %v %v", ep, k, v, ok, mv, mok)
				}
			}
		}
		switch ep % 6 {
		case 2: // expire a slice of the keys, as dedup's TTL does
			n := s.DeleteFunc(func(k string, v counter) bool { return v.N%7 == 0 })
			m := 0
			for k, v := range model {
				if v.N%7 == 0 {
					delete(model, k)
					m++
				}
			}
			if n != m {
				t.Fatalf("DeleteFunc deleted %d, want %d", n, m)
			}
		case 4: // Delete inside Range
			s.Range(func(k string, v counter) bool {
				if v.N%3 == 1 {
					s.Delete(k)
					delete(model, k)
				}
				return true
			})
		}
		if s.Len() != len(model) {
			t.Fatalf("epoch %d: Len %d, want %d", ep, s.Len(), len(model))
		}
		if err := s.Checkpoint(mem, d, ep, nil); err != nil {
			t.Fatal(err)
		}
		want[ep] = clone(model)
		checkIndex(t, &s.t)
	}
	if s.t.compactions == 0 {
		t.Fatal("no compaction happened")
	}
	if got := storeMap(s); fmt.Sprint(got) != fmt.Sprint(model) {
		t.Fatalf("final store differs from the model")
	}
	for ep := uint64(1); ep <= epochs; ep++ {
		r := NewStore[counter](counterCodec{})
		if _, err := r.Restore(mem, dir, ep); err != nil {
			t.Fatalf("restore %d: %v", ep, err)
		}
		checkIndex(t, &r.t)
		if got := storeMap(r); fmt.Sprint(got) != fmt.Sprint(want[ep]) {
			t.Fatalf("restore %d: %d keys, want %d", ep, len(got), len(want[ep]))
		}
		tbl, err := Reconstruct(mem, dir, ep)
		if err != nil {
			t.Fatal(err)
		}
		if int(tbl.Rec.NumRows()) != len(want[ep]) || tbl.Manifest.Entries != int64(len(want[ep])) {
			t.Fatalf("reconstruct %d: %d rows, manifest %d, want %d", ep, tbl.Rec.NumRows(), tbl.Manifest.Entries, len(want[ep]))
		}
		tbl.Release()
	}
}

func clone(m map[string]counter) map[string]counter {
	out := make(map[string]counter, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func storeMap(s *Store[counter]) map[string]counter {
	out := map[string]counter{}
	s.Range(func(k string, v counter) bool { out[k] = v; return true })
	return out
}

// checkIndex verifies the table after a checkpoint: every live entry is found through the
// index at a slot reachable from its home, the index holds nothing else, no change is pending.
func checkIndex(t *testing.T, tb *table[counter]) {
	t.Helper()
	if tb.tombs != 0 || len(tb.dirty) != 0 || tb.mark != tb.nent {
		t.Fatalf("pending changes after checkpoint: tombs %d dirty %d mark %d nent %d", tb.tombs, len(tb.dirty), tb.mark, tb.nent)
	}
	live := 0
	tb.rangeLive(func(i uint32, e *entry[counter]) bool {
		live++
		k := tb.key(e.ref)
		j, ok := tb.find(k, tb.tag(k))
		if !ok || uint32(tb.slots[j])-1 != i {
			t.Fatalf("key %q (entry %d) not found through the index", k, i)
		}
		return true
	})
	used := 0
	for _, s := range tb.slots {
		if s != 0 {
			used++
		}
	}
	if live != tb.live || used != tb.used || used != live {
		t.Fatalf("live %d (counted %d), used slots %d (counted %d)", tb.live, live, tb.used, used)
	}
}

// TestStoreCompaction deletes most keys of a large store: compaction reclaims the entries
// and arena, and every remaining key is still found.
func TestStoreCompaction(t *testing.T) {
	mem := memory.NewGoAllocator()
	d, err := Open(t.TempDir(), "dedup", "dedup", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := NewStore[counter](counterCodec{})
	for i := 0; i < 100_000; i++ {
		s.Put(fmt.Sprintf("key-%08d", i), counter{N: int64(i)})
	}
	s.Discard()
	arenaBytes := func() (n int) {
		for _, c := range s.t.arena {
			n += len(c)
		}
		return n
	}
	arena, mapped := arenaBytes(), s.t.mem.bytes.Load()
	s.DeleteFunc(func(_ string, v counter) bool { return v.N%10 != 0 })
	if err := s.Checkpoint(mem, d, 1, nil); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 10_000 || s.t.nent != 10_000 || s.t.free != 0 || arenaBytes() > arena/9 || s.t.mem.bytes.Load() >= mapped {
		t.Fatalf("after compaction: len %d entries %d free %d arena bytes %d (was %d), mapped %d (was %d)",
			s.Len(), s.t.nent, s.t.free, arenaBytes(), arena, s.t.mem.bytes.Load(), mapped)
	}
	checkIndex(t, &s.t)
	for i := 0; i < 100_000; i++ {
		_, ok := s.Get(fmt.Sprintf("key-%08d", i))
		if ok != (i%10 == 0) {
			t.Fatalf("key %d: present %v", i, ok)
		}
	}
	runtime.KeepAlive(s)
}

// The store's arrays live off the Go heap on Linux (entries too when V holds no pointers);
// Restore frees the memory it replaces, and a collected Store frees the rest.
func TestStoreOffheap(t *testing.T) {
	if pointerFree(reflect.TypeFor[counter]()) || !pointerFree(reflect.TypeFor[int64]()) ||
		!pointerFree(reflect.TypeFor[struct {
			A int32
			B [2]float64
		}]()) || pointerFree(reflect.TypeFor[[]byte]()) {
		t.Fatal("pointerFree")
	}
	if runtime.GOOS != "linux" {
		t.Skip("off-heap memory on Linux only")
	}
	mem := memory.NewGoAllocator()
	dir := t.TempDir()
	d, err := Open(dir, "dedup", "dedup", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := NewStore[int64](int64Codec{})
	for i := 0; i < 200_000; i++ {
		s.Put(fmt.Sprintf("key-%08d", i), int64(i))
	}
	if err := s.Checkpoint(mem, d, 1, nil); err != nil {
		t.Fatal(err)
	}
	o := s.t.mem
	full := o.bytes.Load()
	// slots (2^19 × 8 B), entries (4 chunks of 64Ki × 16 B) and arena (3 MiB) are mapped.
	if full < 10<<20 || !s.t.offEntries {
		t.Fatalf("%d bytes mapped for 200,000 keys (off-heap entries: %v)", full, s.t.offEntries)
	}
	s.DeleteFunc(func(string, int64) bool { return true })
	if err := s.Checkpoint(mem, d, 2, nil); err != nil { // compacts
		t.Fatal(err)
	}
	if got := o.bytes.Load(); got > 1<<20 {
		t.Fatalf("%d bytes still mapped for an empty store", got)
	}
	if _, err := s.Restore(mem, dir, 1); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 200_000 || o.bytes.Load() > full {
		t.Fatalf("restored %d keys in %d mapped bytes (had %d)", s.Len(), o.bytes.Load(), full)
	}
	s = nil
	for i := 0; i < 100 && o.bytes.Load() > 0; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got := o.bytes.Load(); got != 0 {
		t.Fatalf("%d bytes mapped after the store was collected", got)
	}
}

type int64Codec struct{}

func (int64Codec) Fields() []arrow.Field {
	return []arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}
}
func (int64Codec) Append(bs []array.Builder, v int64) { bs[0].(*array.Int64Builder).Append(v) }
func (int64Codec) Decode(cols []arrow.Array, i int) (int64, error) {
	return cols[0].(*array.Int64).Value(i), nil
}

// TestSortedOrdersKeys checks the checkpoint sort (radix on 8-byte prefixes, then full keys)
// against sort.Strings on keys that share long prefixes, are shorter than 8 bytes, contain
// zero bytes, or differ only past the prefix, with and without the radix path.
func TestSortedOrdersKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for _, n := range []int{0, 1, 5, radixMin - 1, radixMin, 20_000} {
		tb := newTable[int64](newOffheap())
		seen := map[string]bool{}
		var want []string
		for len(want) < n {
			var k []byte
			switch rng.IntN(4) {
			case 0: // short, zero bytes likely
				k = make([]byte, rng.IntN(8))
				for j := range k {
					k[j] = byte(rng.IntN(3))
				}
			case 1: // shared 8-byte prefix, differing later
				k = fmt.Appendf(nil, "prefix00%d", rng.IntN(1000))
			case 2: // dedup's shape: tag, length, hex digits
				k = fmt.Appendf(nil, "\x05\x20%032x", rng.Uint64())
			default:
				k = fmt.Appendf(nil, "%x", rng.Uint64()>>rng.IntN(64))
			}
			if seen[string(k)] {
				continue
			}
			seen[string(k)] = true
			want = append(want, string(k))
			tb.put(k, int64(len(want)), true)
		}
		idx := make([]uint32, 0, n)
		tb.rangeLive(func(i uint32, _ *entry[int64]) bool { idx = append(idx, i); return true })
		var got []string
		for _, i := range tb.sorted(idx) {
			got = append(got, string(tb.key(tb.ent(i).ref)))
		}
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Fatalf("n=%d: sorted order differs from sort.Strings", n)
		}
		tb.release()
	}
}
