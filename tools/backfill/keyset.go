package backfill

import (
	"encoding/binary"
	"hash/maphash"
)

// keySet is an exact set of encoded keys (codec.AppendRow) for MERGE-style dedup: keys are
// copied into one arena and indexed by an open-addressing table of (hash, offset) slots, so
// millions of keys cost two allocations that grow by doubling, not one per key. Each key
// carries one bit saying whether the backfill itself inserted it (to find the backfill's
// rows that a concurrent commit made duplicates).
type keySet struct {
	seed  maphash.Seed
	arena []byte
	slots []keySlot
	n     int
}

type keySlot struct {
	hash uint64
	off  uint64 // 1 + offset of the uvarint-length-prefixed key in arena, top bit = ours; 0 = empty
}

const oursBit = 1 << 63

func newKeySet(hint int) *keySet {
	size := 1024
	for 3*size < 4*hint { // load ≤ 0.75 for hint keys
		size *= 2
	}
	return &keySet{seed: maphash.MakeSeed(), slots: make([]keySlot, size)}
}

// Len is the number of keys.
func (s *keySet) Len() int { return s.n }

// Bytes is the memory held (arena and slots).
func (s *keySet) Bytes() int64 { return int64(cap(s.arena)) + int64(len(s.slots))*16 }

func (s *keySet) key(off uint64) []byte {
	p := (off &^ oursBit) - 1
	l, n := binary.Uvarint(s.arena[p:])
	start := p + uint64(n)
	return s.arena[start : start+l]
}

// find returns the slot index of key, or of the empty slot where it would go.
func (s *keySet) find(h uint64, key []byte) (int, bool) {
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &s.slots[i]
		if sl.off == 0 {
			return int(i), false
		}
		if sl.hash == h && string(s.key(sl.off)) == string(key) {
			return int(i), true
		}
	}
}

// Hash is the hash Insert and Lookup use (so callers can compute it on another goroutine).
func (s *keySet) Hash(key []byte) uint64 { return maphash.Bytes(s.seed, key) }

// Insert adds key (ours: inserted by the backfill) and reports whether it was new.
func (s *keySet) Insert(key []byte, ours bool) bool {
	isNew, _ := s.InsertHashed(maphash.Bytes(s.seed, key), key, ours)
	return isNew
}

// InsertHashed is Insert with the key's Hash given; for a key already present it also
// reports whether the backfill inserted it (a repeat within the backfill, not a target hit).
func (s *keySet) InsertHashed(h uint64, key []byte, ours bool) (isNew, existingOurs bool) {
	i, found := s.find(h, key)
	if found {
		return false, s.slots[i].off&oursBit != 0
	}
	off := uint64(len(s.arena)) + 1
	s.arena = binary.AppendUvarint(s.arena, uint64(len(key)))
	s.arena = append(s.arena, key...)
	if ours {
		off |= oursBit
	}
	s.slots[i] = keySlot{hash: h, off: off}
	s.n++
	if 4*s.n > 3*len(s.slots) {
		s.grow()
	}
	return true, false
}

// Lookup reports whether key is present and whether the backfill inserted it.
func (s *keySet) Lookup(key []byte) (found, ours bool) {
	i, found := s.find(maphash.Bytes(s.seed, key), key)
	if !found {
		return false, false
	}
	return true, s.slots[i].off&oursBit != 0
}

// Disown marks key as not the backfill's (its row will not be written).
func (s *keySet) Disown(key []byte) {
	if i, found := s.find(maphash.Bytes(s.seed, key), key); found {
		s.slots[i].off &^= oursBit
	}
}

func (s *keySet) grow() {
	old := s.slots
	s.slots = make([]keySlot, 2*len(old))
	mask := uint64(len(s.slots) - 1)
	for _, sl := range old {
		if sl.off == 0 {
			continue
		}
		i := sl.hash & mask
		for s.slots[i].off != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = sl
	}
}
