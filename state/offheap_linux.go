package state

import "golang.org/x/sys/unix"

// mapBytes returns n zeroed bytes of an anonymous private mapping, nil if the kernel refuses.
// Mappings of 2 MiB or more (a large store's index) ask for transparent huge pages: the index
// is probed at random, and huge pages spare most of the TLB misses and page faults (the
// kernel may decline; /sys/kernel/mm/transparent_hugepage/enabled "madvise" honours it).
func mapBytes(n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil
	}
	if n >= 2<<20 {
		unix.Madvise(b, unix.MADV_HUGEPAGE)
	}
	return b
}

func unmapBytes(b []byte) { unix.Munmap(b) }
