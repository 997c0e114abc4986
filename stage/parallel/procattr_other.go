//go:build !linux

package parallel

import "syscall"

// procAttr puts a member in a process group of its own.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
