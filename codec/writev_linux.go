package codec

import (
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// iovMax is the most iovecs one writev takes (IOV_MAX on Linux).
const iovMax = 1024

// writev writes pieces to w with vectored writes when w is a file descriptor (a pipe, a file:
// one system call for a whole message, no copy into a user-space buffer); ok is false when w
// is not, and nothing was written.
func writev(w io.Writer, pieces [][]byte) (ok bool, err error) {
	sc, isConn := w.(syscall.Conn)
	if !isConn {
		return false, nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false, nil
	}
	werr := rc.Write(func(fd uintptr) bool {
		for len(pieces) > 0 {
			n, e := unix.Writev(int(fd), pieces[:min(len(pieces), iovMax)])
			switch {
			case e == unix.EINTR:
				continue
			case e == unix.EAGAIN:
				return false // wait until writable (a non-blocking descriptor)
			case e != nil:
				err = e
				return true
			}
			for n > 0 {
				if n < len(pieces[0]) {
					pieces[0] = pieces[0][n:]
					break
				}
				n -= len(pieces[0])
				pieces = pieces[1:]
			}
			for len(pieces) > 0 && len(pieces[0]) == 0 {
				pieces = pieces[1:]
			}
		}
		return true
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		name := ""
		if f, ok := w.(*os.File); ok {
			name = f.Name()
		}
		err = &os.PathError{Op: "write", Path: name, Err: err}
	}
	return true, err
}
