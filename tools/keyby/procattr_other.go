//go:build !linux

package keyby

import "syscall"

// childProcAttr: only Linux can tie a child's life to its parent's (see procattr_linux.go).
func childProcAttr() *syscall.SysProcAttr { return nil }
