package codec

import (
	"os"

	"golang.org/x/sys/unix"
)

// PipeSize is the capacity streamkit asks the kernel for on pipes between stages (1 MiB, the
// default /proc/sys/fs/pipe-max-size). The default 64 KiB makes every batch of a few MB
// cross in dozens of context switches.
const PipeSize = 1 << 20

// TunePipe enlarges the kernel buffer of f when f is a pipe; otherwise, or when the kernel
// refuses, it does nothing. It returns the resulting capacity (0 when f is not a pipe).
func TunePipe(f *os.File) int {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return 0
	}
	n, err := unix.FcntlInt(f.Fd(), unix.F_SETPIPE_SZ, PipeSize)
	if err != nil {
		n, _ = unix.FcntlInt(f.Fd(), unix.F_GETPIPE_SZ, 0)
	}
	return n
}
