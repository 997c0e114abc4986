package codec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A freed buffer comes back for an allocation it fits (the smallest that fits), growing keeps
// the contents, and every buffer goes back to the underlying allocator in the end.
func TestRecycler(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := NewRecycler(mem)
	big, small := r.Allocate(1<<20), r.Allocate(64<<10)
	big[0], small[0] = 1, 2
	r.Free(big)
	r.Free(small)
	if b := r.Allocate(40 << 10); b[0] != 2 || len(b) != 40<<10 {
		t.Fatalf("allocation of 40 KiB did not reuse the 64 KiB buffer (len %d)", len(b))
	} else {
		b = r.Reallocate(100<<10, b)
		if b[0] != 2 || len(b) != 100<<10 {
			t.Fatalf("reallocated buffer lost its contents or length (%d)", len(b))
		}
		r.Free(b)
	}
	if tiny := r.Allocate(100); len(tiny) != 100 {
		t.Fatal("small allocation")
	} else {
		r.Free(tiny)
	}
	var bufs [][]byte
	for i := 0; i < RecyclerSlots+5; i++ {
		bufs = append(bufs, r.Allocate((i+1)*8<<10))
	}
	for _, b := range bufs[1:] {
		r.Free(b)
	}
	r.Release()
	r.Free(bufs[0]) // freed after Release: back to mem (AssertSize above)
}
