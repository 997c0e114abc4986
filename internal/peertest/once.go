package peertest

import "sync"

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }
