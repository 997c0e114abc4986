package backfill

import (
	"encoding/binary"
	"hash/maphash"
	"sync"
)

// keySet is an exact set of encoded keys (codec.AppendRow) for MERGE-style dedup. Keys are
// copied into arena chunks and indexed by open-addressing tables of (hash, reference) slots,
// so millions of keys cost a few large allocations, never one per key, and growing never
// copies key bytes. The set is split into shards by the hash's top bits; a batch of keys is
// inserted by one goroutine per shard (each shard sees its keys in batch order, so the first
// occurrence of a key in a batch is the one that is new). Each key carries one bit saying
// whether the backfill itself inserted it (to tell repeats within the backfill from keys
// already in the target, and to find the backfill's rows a concurrent commit duplicated).
type keySet struct {
	seed   maphash.Seed
	shards []*keyShard
	shift  uint // hash >> shift = shard
}

// keyShard is one shard: an arena of key bytes and a table of slots.
type keyShard struct {
	chunks [][]byte
	slots  []keySlot
	n      int
}

type keySlot struct {
	hash uint64
	ref  uint64 // 1 + (chunk << 32 | offset) of the uvarint-length-prefixed key; top bit = ours; 0 = empty
}

const (
	oursBit   = 1 << 63
	chunkSize = 16 << 20
)

// newKeySet sizes the set for about hint keys in shards (a power of two, ≥ 1) shards.
func newKeySet(hint, shards int) *keySet {
	s := &keySet{seed: maphash.MakeSeed()}
	n, bits := 1, uint(0)
	for n < shards {
		n *= 2
		bits++
	}
	s.shift = 64 - bits
	if bits == 0 {
		s.shift = 63 // hash >> 63 is 0 or 1; masked below
	}
	per := hint / n
	for i := 0; i < n; i++ {
		size := 1024
		for 3*size < 4*per { // load ≤ 0.75 for hint keys
			size *= 2
		}
		s.shards = append(s.shards, &keyShard{slots: make([]keySlot, size)})
	}
	return s
}

func (s *keySet) shard(h uint64) *keyShard {
	if len(s.shards) == 1 {
		return s.shards[0]
	}
	return s.shards[h>>s.shift]
}

// Len is the number of keys.
func (s *keySet) Len() int {
	n := 0
	for _, sh := range s.shards {
		n += sh.n
	}
	return n
}

// Bytes is the memory held (arena chunks and slots).
func (s *keySet) Bytes() int64 {
	var b int64
	for _, sh := range s.shards {
		b += int64(len(sh.chunks))*chunkSize + int64(len(sh.slots))*16
	}
	return b
}

// Hash is the hash the set uses for key.
func (s *keySet) Hash(key []byte) uint64 { return maphash.Bytes(s.seed, key) }

func (sh *keyShard) key(ref uint64) []byte {
	r := (ref &^ oursBit) - 1
	c := sh.chunks[r>>32]
	p := r & (1<<32 - 1)
	l, n := binary.Uvarint(c[p:])
	start := p + uint64(n)
	return c[start : start+l]
}

// find returns the slot index of key, or of the empty slot where it would go.
func (sh *keyShard) find(h uint64, key []byte) (int, bool) {
	mask := uint64(len(sh.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &sh.slots[i]
		if sl.ref == 0 {
			return int(i), false
		}
		if sl.hash == h && string(sh.key(sl.ref)) == string(key) {
			return int(i), true
		}
	}
}

// insert adds key with hash h; for a present key it reports whether the backfill inserted it.
func (sh *keyShard) insert(h uint64, key []byte, ours bool) (isNew, existingOurs bool) {
	i, found := sh.find(h, key)
	if found {
		return false, sh.slots[i].ref&oursBit != 0
	}
	need := binary.MaxVarintLen64 + len(key)
	if len(sh.chunks) == 0 || cap(sh.chunks[len(sh.chunks)-1])-len(sh.chunks[len(sh.chunks)-1]) < need {
		sh.chunks = append(sh.chunks, make([]byte, 0, max(chunkSize, need)))
	}
	ci := len(sh.chunks) - 1
	c := sh.chunks[ci]
	ref := uint64(ci)<<32 | uint64(len(c))
	c = binary.AppendUvarint(c, uint64(len(key)))
	sh.chunks[ci] = append(c, key...)
	ref++
	if ours {
		ref |= oursBit
	}
	sh.slots[i] = keySlot{hash: h, ref: ref}
	sh.n++
	if 4*sh.n > 3*len(sh.slots) {
		sh.grow()
	}
	return true, false
}

func (sh *keyShard) grow() {
	old := sh.slots
	sh.slots = make([]keySlot, 2*len(old))
	mask := uint64(len(sh.slots) - 1)
	for _, sl := range old {
		if sl.ref == 0 {
			continue
		}
		i := sl.hash & mask
		for sh.slots[i].ref != 0 {
			i = (i + 1) & mask
		}
		sh.slots[i] = sl
	}
}

// Insert adds key (ours: inserted by the backfill) and reports whether it was new.
func (s *keySet) Insert(key []byte, ours bool) bool {
	h := s.Hash(key)
	isNew, _ := s.shard(h).insert(h, key, ours)
	return isNew
}

// Lookup reports whether key is present and whether the backfill inserted it.
func (s *keySet) Lookup(key []byte) (found, ours bool) {
	h := s.Hash(key)
	sh := s.shard(h)
	i, found := sh.find(h, key)
	if !found {
		return false, false
	}
	return true, sh.slots[i].ref&oursBit != 0
}

// Disown marks key as not the backfill's (its row will not be written).
func (s *keySet) Disown(key []byte) {
	h := s.Hash(key)
	sh := s.shard(h)
	if i, found := sh.find(h, key); found {
		sh.slots[i].ref &^= oursBit
	}
}

// Result of inserting one key of a batch.
const (
	resNew    byte = iota // the key was not in the set
	resTarget             // already present, from the target (or a concurrent commit)
	resOurs               // already present, inserted earlier by the backfill
)

// InsertBlock inserts the keys of kb (ours: from the backfill), one goroutine per shard, and
// writes one result per key into res (len ≥ number of keys).
func (s *keySet) InsertBlock(kb *keyBlock, ours bool, res []byte) {
	n := len(kb.hashes)
	one := func(sh int) {
		shard := s.shards[sh]
		for i := 0; i < n; i++ {
			h := kb.hashes[i]
			if len(s.shards) > 1 && int(h>>s.shift) != sh {
				continue
			}
			isNew, was := shard.insert(h, kb.key(i), ours)
			switch {
			case isNew:
				res[i] = resNew
			case was:
				res[i] = resOurs
			default:
				res[i] = resTarget
			}
		}
	}
	if len(s.shards) == 1 || n < 4096 {
		for sh := range s.shards {
			one(sh)
		}
		return
	}
	var wg sync.WaitGroup
	wg.Add(len(s.shards))
	for sh := range s.shards {
		go func() {
			defer wg.Done()
			one(sh)
		}()
	}
	wg.Wait()
}
