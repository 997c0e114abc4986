package state

import (
	"reflect"
	"sync/atomic"
	"unsafe"
)

// offheap allocates the big pointer-free arrays of a Store (index slots, key arena chunks,
// and entries when V holds no pointers) outside the Go heap where the platform allows
// (mapBytes: anonymous mmap on Linux), falling back to the heap elsewhere or when a mapping
// fails. Off-heap state does not count towards the garbage collector's heap goal, so a store
// of 10M keys costs its ~50 bytes per key of memory, not that plus GOGC's headroom (another
// 100% by default), and freed memory goes back to the OS at once. The store frees what it
// replaces (rehash, compaction, restore); a cleanup frees the rest when the Store is
// collected.
type offheap struct {
	regions map[*byte][]byte // live mappings by their first byte
	bytes   atomic.Int64     // bytes mapped (atomic: the cleanup may run on another goroutine)
}

func newOffheap() *offheap { return &offheap{regions: map[*byte][]byte{}} }

// alloc returns n zeroed bytes (n > 0).
func (o *offheap) alloc(n int) []byte {
	if b := mapBytes(n); b != nil {
		o.regions[unsafe.SliceData(b)] = b
		o.bytes.Add(int64(len(b)))
		return b
	}
	return make([]byte, n)
}

// free releases b (as returned by alloc, or any reslice of it that starts at its first
// byte); heap memory is left to the collector.
func (o *offheap) free(b []byte) {
	if cap(b) == 0 {
		return
	}
	p := unsafe.SliceData(b)
	if m, ok := o.regions[p]; ok {
		delete(o.regions, p)
		o.bytes.Add(-int64(len(m)))
		unmapBytes(m)
	}
}

// freeAll releases every mapping.
func (o *offheap) freeAll() {
	for p, m := range o.regions {
		delete(o.regions, p)
		unmapBytes(m)
		o.bytes.Add(-int64(len(m)))
	}
}

// allocSlice returns a zeroed []T of length n backed by alloc; T must hold no pointers.
func allocSlice[T any](o *offheap, n int) []T {
	var zero T
	b := o.alloc(n * int(unsafe.Sizeof(zero)))
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// freeSlice releases a slice made by allocSlice.
func freeSlice[T any](o *offheap, s []T) {
	if cap(s) == 0 {
		return
	}
	var zero T
	o.free(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), cap(s)*int(unsafe.Sizeof(zero))))
}

// pointerFree reports whether values of t hold no Go pointers (so they may live off-heap).
func pointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return t.Len() == 0 || pointerFree(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if !pointerFree(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}
