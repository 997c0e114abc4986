package keyby

import "syscall"

// childProcAttr makes the kernel kill a shard when keyby dies (prctl PR_SET_PDEATHSIG): a
// shard outliving a killed keyby would go on committing what is left in its pipe and hold its
// checkpoint lock, so restarts right after the kill would be refused as "locked". Its epoch
// in flight is lost with it and replayed on restart, as with any crash.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
