package parallel

import "syscall"

// procAttr puts a member in a process group of its own, and makes the kernel kill its first
// process (the shell of a pipeline) when run dies (PR_SET_PDEATHSIG).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
