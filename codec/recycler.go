package codec

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Recycler is a memory.Allocator that keeps up to RecyclerSlots freed buffers and hands them
// out again, so a stage that reads, splits and writes batches in a loop stops allocating (and
// zeroing, and collecting) a few MB per batch. Unlike memory.GoAllocator it does NOT zero the
// memory it returns: use it only for buffers their user fills completely (message bodies read
// from a stream, gathered columns), and only where nothing keeps a slice of a buffer after
// releasing it. The underlying allocator must return slices whose length is their capacity
// (memory.GoAllocator and memory.CheckedAllocator do): a buffer goes back to it whole. Safe
// for concurrent use.
type Recycler struct {
	mem      memory.Allocator
	mu       sync.Mutex
	free     [][]byte
	released bool // after Release, freed buffers go straight back to mem
}

// NewRecycler returns a Recycler that allocates from mem and gives buffers back to mem when
// it drops them (Release gives back all it keeps).
func NewRecycler(mem memory.Allocator) *Recycler { return &Recycler{mem: mem} }

// Release gives every kept buffer back to the underlying allocator; buffers freed later (a
// batch still referenced when its stage ended) go straight back to it too.
func (r *Recycler) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.released = true
	for _, b := range r.free {
		r.mem.Free(b[:cap(b)])
	}
	r.free = nil
}

// RecyclerSlots is how many freed buffers a Recycler keeps (the smallest is dropped first).
const RecyclerSlots = 16

// recycleMin is the smallest capacity worth keeping (smaller buffers come from the Go heap).
const recycleMin = 4 << 10

// Allocate returns a buffer of size bytes (not zeroed when recycled), 64-byte aligned as
// memory.GoAllocator's.
func (r *Recycler) Allocate(size int) []byte {
	if size >= recycleMin {
		r.mu.Lock()
		best := -1
		for i, b := range r.free {
			if cap(b) >= size && (best < 0 || cap(b) < cap(r.free[best])) {
				best = i
			}
		}
		if best >= 0 {
			b := r.free[best]
			r.free[best] = r.free[len(r.free)-1]
			r.free = r.free[:len(r.free)-1]
			r.mu.Unlock()
			return b[:size]
		}
		r.mu.Unlock()
	}
	return r.mem.Allocate(size)
}

// Reallocate resizes b to size bytes, keeping its contents.
func (r *Recycler) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		return b[:size]
	}
	nb := r.Allocate(size)
	copy(nb, b)
	r.Free(b)
	return nb
}

// Free keeps b for a later Allocate, or gives it (or a smaller kept one) back to the
// underlying allocator.
func (r *Recycler) Free(b []byte) {
	if cap(b) < recycleMin {
		r.mem.Free(b[:cap(b)])
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		r.mem.Free(b[:cap(b)])
		return
	}
	if len(r.free) < RecyclerSlots {
		r.free = append(r.free, b)
		return
	}
	small := 0
	for i, f := range r.free {
		if cap(f) < cap(r.free[small]) {
			small = i
		}
	}
	if cap(b) > cap(r.free[small]) {
		b, r.free[small] = r.free[small], b
	}
	r.mem.Free(b[:cap(b)])
}
