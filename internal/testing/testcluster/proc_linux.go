package testcluster

import "syscall"

// serverAttr returns the attributes of a server process: it runs as the
// user as, when set, and the kernel sends it onParentDeath when the thread
// that started it exits, so a server dies with the test binary even when
// the binary is killed.
func serverAttr(onParentDeath syscall.Signal, as *runAs) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Pdeathsig: onParentDeath}
	if as != nil {
		a.Credential = &syscall.Credential{Uid: as.uid, Gid: as.gid}
	}
	return a
}
