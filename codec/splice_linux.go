package codec

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// splice copies n bytes from src to dst with splice(2), in the kernel (one of them must be a
// pipe). ok is false when the kernel refuses the pair (EINVAL before anything was copied):
// nothing was copied and the caller copies itself. src ending early is io.ErrUnexpectedEOF.
// A descriptor that is not ready (O_NONBLOCK) is waited for with poll(2).
func splice(dst, src *os.File, n int64) (ok bool, err error) {
	sc, err := src.SyscallConn()
	if err != nil {
		return false, nil
	}
	dc, err := dst.SyscallConn()
	if err != nil {
		return false, nil
	}
	ok = true
	cerr := sc.Control(func(sfd uintptr) {
		derr := dc.Control(func(dfd uintptr) {
			copied := false
			for n > 0 {
				m, e := unix.Splice(int(sfd), nil, int(dfd), nil, int(min(n, 1<<30)), unix.SPLICE_F_MOVE)
				switch {
				case e == unix.EINTR:
					continue
				case e == unix.EAGAIN:
					if err = waitFD(int(sfd), unix.POLLIN); err == nil {
						err = waitFD(int(dfd), unix.POLLOUT)
					}
					if err != nil {
						return
					}
					continue
				case e == unix.EINVAL && !copied:
					ok = false
					return
				case e != nil:
					err = &os.PathError{Op: "splice", Path: dst.Name(), Err: e}
					return
				case m == 0:
					err = io.ErrUnexpectedEOF
					return
				}
				copied = true
				n -= m
			}
		})
		if err == nil {
			err = derr
		}
	})
	if err == nil {
		err = cerr
	}
	return ok, err
}

// waitFD blocks until fd is ready for events (or hung up, or in error: the next call says).
func waitFD(fd int, events int16) error {
	for {
		_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: events}}, -1)
		if err != unix.EINTR {
			return err
		}
	}
}
