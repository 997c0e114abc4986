package state

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"reflect"
	"slices"
	"unsafe"
)

// The memory layout of Store: a compact hash table of byte keys, built for operators that
// hold tens of millions of keys (dedup). Per key it costs the key bytes plus a one-byte length
// in an append-only arena, one entry (arena reference + flags, and the value V), and one
// 8-byte index slot at a load factor between 3/8 and 3/4 — about 50 bytes for a 16-byte key
// with an int64 value, against ~115 for a Go map[string]V plus a dirty set. Nothing in it
// holds a Go pointer (unless V does), so the garbage collector does not scan it.
//
//   - arena: 1 MiB byte chunks (a larger key gets a chunk of its own); a key is its uvarint
//     length and its bytes. Compaction copies the live keys into new chunks and frees the old.
//   - entries: chunks of 65536 entry[V]; an entry's index is its identity in the index and in
//     the dirty list. Entries appended since the last checkpoint (index ≥ mark) are the new
//     keys of the epoch; older entries changed in the epoch are listed in dirty.
//   - index: open addressing with linear probing over a power-of-two slice of uint64 slots:
//     the high 32 bits are the key's hash tag (the high 32 bits of its maphash), the low 32
//     bits the entry index + 1 (0 = empty slot). The home slot is the tag's top bits, so the
//     index grows and deletes (backward shift) without rehashing keys.
//
// A Delete leaves the entry in the index, flagged deleted (a tombstone), until the next
// checkpoint has written it to the changelog (or Discard); then the entry is freed and its
// slot removed. Freed entries and their arena bytes are reclaimed by compaction once they
// amount to half the live keys.
//
// Slots, arena chunks and (when V holds no pointers) entry chunks are allocated off the Go
// heap (offheap.go), so the memory of the keys is not doubled by the collector's headroom.
const (
	entryChunkBits = 16
	entryChunkSize = 1 << entryChunkBits
	entryChunkMask = entryChunkSize - 1
	arenaChunkSize = 1 << 20

	// entry.ref: bits 0-31 offset in the arena chunk, 32-61 chunk number, 62-63 flags.
	refDeleted = 1 << 63 // tombstone (still in the index) or free (not in it)
	refDirty   = 1 << 62 // an entry < mark that is on the dirty list
	refFlags   = refDeleted | refDirty
	refChunk   = 1<<30 - 1

	minSlots = 64
)

type entry[V any] struct {
	ref uint64
	v   V
}

// table is the compact keyed map behind Store: keys are byte strings, values V.
type table[V any] struct {
	mem         *offheap
	offEntries  bool // V holds no pointers: entry chunks live off-heap
	seed        maphash.Seed
	slots       []uint64
	tshift      uint // home slot = tag >> tshift
	used        int  // occupied slots (live keys and tombstones)
	entries     [][]entry[V]
	nent        uint32 // entries appended, including freed ones
	arena       [][]byte
	live        int
	mark        uint32   // entries ≥ mark were appended since the last checkpoint
	dirty       []uint32 // entries < mark changed or deleted since the last checkpoint
	tombs       int      // tombstones (deleted since the last checkpoint, still indexed)
	free        int      // freed entries awaiting compaction
	compactions int      // (tests)
	sink        uint64   // the sum of putAbsentAll's prefetching loads (kept so they are made)
}

func newTable[V any](mem *offheap) table[V] {
	return table[V]{mem: mem, seed: maphash.MakeSeed(), offEntries: pointerFree(reflect.TypeFor[V]())}
}

// bytesOf returns the bytes of s without copying; they must not be modified.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

func (t *table[V]) ent(i uint32) *entry[V] {
	return &t.entries[i>>entryChunkBits][i&entryChunkMask]
}

// key returns the key bytes of ref (aliasing the arena: never modify them).
func (t *table[V]) key(ref uint64) []byte {
	c := t.arena[(ref>>32)&refChunk]
	off := uint32(ref)
	if n := c[off]; n < 0x80 {
		return c[off+1 : off+1+uint32(n)]
	}
	n, w := binary.Uvarint(c[off:])
	start := off + uint32(w)
	return c[start : start+uint32(n)]
}

func (t *table[V]) tag(k []byte) uint32 { return uint32(maphash.Bytes(t.seed, k) >> 32) }

func (t *table[V]) home(tag uint32) int { return int(tag >> t.tshift) }

// find returns the slot of k (found) or the empty slot where it would go.
func (t *table[V]) find(k []byte, tag uint32) (int, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	mask := len(t.slots) - 1
	for i := t.home(tag); ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return i, false
		}
		if uint32(s>>32) == tag && bytes.Equal(t.key(t.ent(uint32(s)-1).ref), k) {
			return i, true
		}
	}
}

// reserve grows the index so that one more key keeps the load ≤ 3/4.
func (t *table[V]) reserve() {
	if (t.used+1)*4 <= len(t.slots)*3 {
		return
	}
	n := max(minSlots, 2*len(t.slots))
	t.rehash(n)
}

// rehash moves the index to n slots (a power of two ≥ the occupied slots / 0.75).
func (t *table[V]) rehash(n int) {
	old := t.slots
	t.slots = allocSlice[uint64](t.mem, n)
	defer freeSlice(t.mem, old)
	t.tshift = uint(32 - log2(n))
	mask := n - 1
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := t.home(uint32(s >> 32))
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

func log2(n int) int {
	b := 0
	for 1<<b < n {
		b++
	}
	return b
}

// appendKey copies k into the arena and returns its reference.
func (t *table[V]) appendKey(k []byte) uint64 {
	sz := uvarintLen(uint64(len(k))) + len(k)
	last := len(t.arena) - 1
	if last < 0 || cap(t.arena[last])-len(t.arena[last]) < sz {
		t.arena = append(t.arena, t.mem.alloc(max(arenaChunkSize, sz))[:0])
		last++
	}
	c := t.arena[last]
	off := len(c)
	c = binary.AppendUvarint(c, uint64(len(k)))
	t.arena[last] = append(c, k...)
	return uint64(last)<<32 | uint64(off)
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// appendEntry appends an entry for a new key and returns its index.
func (t *table[V]) appendEntry(ref uint64, v V) uint32 {
	i := t.nent
	if i&entryChunkMask == 0 {
		if t.offEntries {
			t.entries = append(t.entries, allocSlice[entry[V]](t.mem, entryChunkSize))
		} else {
			t.entries = append(t.entries, make([]entry[V], entryChunkSize))
		}
	}
	*t.ent(i) = entry[V]{ref: ref, v: v}
	t.nent++
	return i
}

// get returns the entry of k, nil when k is absent (or deleted).
func (t *table[V]) get(k []byte) *entry[V] {
	i, ok := t.find(k, t.tag(k))
	if !ok {
		return nil
	}
	e := t.ent(uint32(t.slots[i]) - 1)
	if e.ref&refDeleted != 0 {
		return nil
	}
	return e
}

// touch records that entry i changed in this epoch.
func (t *table[V]) touch(i uint32, e *entry[V]) {
	if i < t.mark && e.ref&refDirty == 0 {
		e.ref |= refDirty
		t.dirty = append(t.dirty, i)
	}
}

// put sets k to v (only when k is absent unless overwrite) and reports whether k was absent.
func (t *table[V]) put(k []byte, v V, overwrite bool) bool {
	return t.putTag(k, t.tag(k), v, overwrite)
}

// prefetchGroup is how many keys putAbsentAll looks up together: about the number of cache
// misses a core keeps in flight (10-16 line fill buffers on current x86 and ARM cores).
const prefetchGroup = 16

// putAbsentAll is put(keys[i], val(i), false) for i = 0, 1, ... in order, calling done(i,
// inserted) after each (val and done may depend on the earlier calls). It computes the hash
// tags of all the keys first, then takes them in groups of prefetchGroup: it loads the home
// index slots of the group, then the entries those slots point to (when the tag matches),
// then the first key bytes of those entries, and only then puts the keys. Each pass is a
// short loop of independent loads, so the core has the cache misses of the whole group in
// flight at once instead of waiting for them one lookup after the other (Go has no prefetch
// instruction: these are plain loads into a sum kept in t.sink). tags is scratch space,
// returned for reuse.
func (t *table[V]) putAbsentAll(keys [][]byte, tags []uint32, val func(int) V, done func(int, bool)) []uint32 {
	tags = tags[:0]
	for _, k := range keys {
		tags = append(tags, t.tag(k))
	}
	var acc uint64
	for base := 0; base < len(keys); base += prefetchGroup {
		group := tags[base:min(base+prefetchGroup, len(tags))]
		if len(t.slots) > 0 {
			for _, tag := range group {
				acc += t.slots[t.home(tag)]
			}
			for _, tag := range group {
				if s := t.slots[t.home(tag)]; s != 0 && uint32(s>>32) == tag {
					acc += t.ent(uint32(s) - 1).ref
				}
			}
			for _, tag := range group {
				if s := t.slots[t.home(tag)]; s != 0 && uint32(s>>32) == tag {
					ref := t.ent(uint32(s) - 1).ref
					acc += uint64(t.arena[(ref>>32)&refChunk][uint32(ref)])
				}
			}
		}
		for j, tag := range group {
			i := base + j
			done(i, t.putTag(keys[i], tag, val(i), false))
		}
	}
	t.sink += acc
	return tags
}

// touchKeys loads the entries of idx, then the first byte of their keys, in two short loops
// of independent loads: a checkpoint reads the changed entries in key order, which is random
// in memory, and this way the cache misses of a group overlap instead of coming one after the
// other (see putAbsentAll).
func (t *table[V]) touchKeys(idx []uint32) {
	var acc uint64
	for _, i := range idx {
		acc += t.ent(i).ref
	}
	for _, i := range idx {
		ref := t.ent(i).ref
		acc += uint64(t.arena[(ref>>32)&refChunk][uint32(ref)])
	}
	t.sink += acc
}

// putTag is put for a key whose tag is known.
func (t *table[V]) putTag(k []byte, tag uint32, v V, overwrite bool) bool {
	t.reserve()
	i, ok := t.find(k, tag)
	if ok {
		ei := uint32(t.slots[i]) - 1
		e := t.ent(ei)
		if e.ref&refDeleted != 0 { // deleted in this epoch: alive again, still pending
			e.ref &^= refDeleted
			e.v = v
			t.tombs--
			t.live++
			return true
		}
		if overwrite {
			e.v = v
			t.touch(ei, e)
		}
		return false
	}
	ei := t.appendEntry(t.appendKey(k), v)
	t.slots[i] = uint64(tag)<<32 | uint64(ei+1)
	t.used++
	t.live++
	return true
}

// del deletes k; it reports whether k was present.
func (t *table[V]) del(k []byte) bool {
	i, ok := t.find(k, t.tag(k))
	if !ok {
		return false
	}
	ei := uint32(t.slots[i]) - 1
	t.kill(ei, t.ent(ei))
	return true
}

// kill turns a live entry into a tombstone.
func (t *table[V]) kill(i uint32, e *entry[V]) bool {
	if e.ref&refDeleted != 0 {
		return false
	}
	e.ref |= refDeleted
	t.touch(i, e)
	t.live--
	t.tombs++
	return true
}

// unindex removes entry ei, whose key has hash tag tag, from the index (backward-shift
// deletion for linear probing).
func (t *table[V]) unindex(ei uint32, tag uint32) {
	mask := len(t.slots) - 1
	i := t.home(tag)
	for uint32(t.slots[i]) != ei+1 {
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		s := t.slots[j]
		if s == 0 {
			break
		}
		h := t.home(uint32(s >> 32))
		// The slot at j may move back to i unless its home lies cyclically in (i, j].
		if (i <= j && (h <= i || h > j)) || (i > j && h <= i && h > j) {
			t.slots[i] = s
			i = j
		}
	}
	t.slots[i] = 0
	t.used--
}

// pending calls f for every entry changed since the last checkpoint (live or tombstone).
func (t *table[V]) pending(f func(i uint32, e *entry[V])) {
	for _, i := range t.dirty {
		f(i, t.ent(i))
	}
	for i := t.mark; i < t.nent; i++ {
		f(i, t.ent(i))
	}
}

// settle ends the epoch's change tracking: tombstones leave the index and their entries are
// freed, the dirty list is cleared, and the store is compacted when freed entries amount to
// half the live keys.
func (t *table[V]) settle() {
	if t.tombs > 0 {
		dead := t.indexBuf(t.tombs)
		t.pending(func(i uint32, e *entry[V]) {
			if e.ref&refDeleted != 0 {
				dead = append(dead, i)
			}
		})
		// In groups, as putAbsentAll: the entries, keys and home slots of a group are loaded
		// together before their slots are removed one by one.
		var tags [prefetchGroup]uint32
		var acc uint64
		for lo := 0; lo < len(dead); lo += prefetchGroup {
			group := dead[lo:min(lo+prefetchGroup, len(dead))]
			t.touchKeys(group)
			for j, i := range group {
				tags[j] = t.tag(t.key(t.ent(i).ref))
				acc += t.slots[t.home(tags[j])]
			}
			for j, i := range group {
				t.unindex(i, tags[j])
			}
		}
		t.sink += acc
		t.free += len(dead)
		freeSlice(t.mem, dead)
		t.tombs = 0
	}
	for _, i := range t.dirty {
		t.ent(i).ref &^= refDirty
	}
	t.dirty = t.dirty[:0]
	t.mark = t.nent
	if t.free > 1024 && t.free*2 > t.live {
		t.compact()
	}
}

// compact copies the live entries and their keys into fresh chunks, rebuilds the index and
// frees the old chunks. Called after settle (no pending changes).
func (t *table[V]) compact() {
	old := *t
	t.compactions++
	t.entries, t.nent, t.arena = nil, 0, nil
	t.slots, t.used = nil, 0
	t.free, t.dirty = 0, nil
	n := minSlots
	for n*3 < t.live*4 {
		n *= 2
	}
	t.rehash(n)
	mask := n - 1
	for i := uint32(0); i < old.nent; i++ {
		e := old.ent(i)
		if e.ref&refDeleted != 0 {
			continue
		}
		k := old.key(e.ref)
		tag := t.tag(k)
		ei := t.appendEntry(t.appendKey(k), e.v)
		j := t.home(tag)
		for t.slots[j] != 0 {
			j = (j + 1) & mask
		}
		t.slots[j] = uint64(tag)<<32 | uint64(ei+1)
		t.used++
	}
	t.mark = t.nent
	old.release()
}

// release frees the table's memory; the table must not be used afterwards.
func (t *table[V]) release() {
	freeSlice(t.mem, t.slots)
	for _, c := range t.arena {
		t.mem.free(c[:cap(c)])
	}
	if t.offEntries {
		for _, c := range t.entries {
			freeSlice(t.mem, c)
		}
	}
	t.slots, t.arena, t.entries = nil, nil, nil
}

// rangeLive calls f for every live entry in insertion order until f returns false.
func (t *table[V]) rangeLive(f func(i uint32, e *entry[V]) bool) {
	for i := uint32(0); i < t.nent; i++ {
		e := t.ent(i)
		if e.ref&refDeleted == 0 && !f(i, e) {
			return
		}
	}
}

// indexBuf returns an empty list of entry indexes with capacity n, off the Go heap when n > 0
// (freeSlice releases it).
func (t *table[V]) indexBuf(n int) []uint32 {
	if n == 0 {
		return nil
	}
	return allocSlice[uint32](t.mem, n)[:0]
}

// sortItem is an entry index with its key's first 8 bytes (big-endian, zero-padded).
type sortItem struct {
	prefix uint64
	i      uint32
}

// radixMin is the size below which sorted uses a comparison sort.
const radixMin = 1024

// sorted returns the entry indexes of idx ordered by key bytes (in place): an LSD radix sort
// on the keys' first 8 bytes (bytes equal in every key are skipped), then a comparison sort of
// the full keys within each run of equal prefixes (rare unless keys share long prefixes).
// Checkpoints sort every changed key, so this is on dedup's hot path.
func (t *table[V]) sorted(idx []uint32) []uint32 {
	if len(idx) < 2 {
		return idx
	}
	// Off the Go heap (like the table): at a checkpoint of millions of changed keys these
	// buffers are the largest allocation, and on the heap GOGC doubled them in the RSS.
	items := allocSlice[sortItem](t.mem, len(idx))
	defer freeSlice(t.mem, items)
	for n, i := range idx {
		items[n] = sortItem{keyPrefix(t.key(t.ent(i).ref)), i}
	}
	byKey := func(a, b sortItem) int {
		if a.prefix != b.prefix {
			if a.prefix < b.prefix {
				return -1
			}
			return 1
		}
		return bytes.Compare(t.key(t.ent(a.i).ref), t.key(t.ent(b.i).ref))
	}
	if len(items) < radixMin {
		slices.SortFunc(items, byKey)
	} else {
		tmp := allocSlice[sortItem](t.mem, len(items))
		radixSort(items, tmp)
		freeSlice(t.mem, tmp)
		for lo := 0; lo < len(items); {
			hi := lo + 1
			for hi < len(items) && items[hi].prefix == items[lo].prefix {
				hi++
			}
			if hi-lo > 1 {
				slices.SortFunc(items[lo:hi], byKey)
			}
			lo = hi
		}
	}
	for n := range items {
		idx[n] = items[n].i
	}
	return idx
}

// keyPrefix is the first 8 bytes of k, big-endian, zero-padded: prefixes order as the keys
// do, except that keys sharing their first 8 bytes (or shorter keys padded) tie.
func keyPrefix(k []byte) uint64 {
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(k)
	}
	var p [8]byte
	copy(p[:], k)
	return binary.BigEndian.Uint64(p[:])
}

// radixSort sorts items by prefix (stable LSD radix sort, one pass per byte that varies); tmp
// is scratch space of len(items).
func radixSort(items, tmp []sortItem) {
	var counts [8][256]int
	for _, it := range items {
		for b := range 8 {
			counts[b][byte(it.prefix>>(8*b))]++
		}
	}
	src, dst := items, tmp
	for b := range 8 {
		c := &counts[b]
		if c[byte(src[0].prefix>>(8*b))] == len(src) {
			continue // every key has this byte
		}
		sum := 0
		for v := range c {
			c[v], sum = sum, sum+c[v]
		}
		for _, it := range src {
			v := byte(it.prefix >> (8 * b))
			dst[c[v]] = it
			c[v]++
		}
		src, dst = dst, src
	}
	if &src[0] != &items[0] {
		copy(items, src)
	}
}

// bytes is the memory the table holds: index slots, key arena chunks and entry chunks.
func (t *table[V]) bytes() int64 {
	n := int64(len(t.slots)) * 8
	for _, c := range t.arena {
		n += int64(cap(c))
	}
	return n + int64(len(t.entries))*entryChunkSize*int64(unsafe.Sizeof(entry[V]{}))
}
