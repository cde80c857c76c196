//go:build unix && !linux

package testcluster

import "syscall"

// serverAttr returns the attributes of a server process: it runs as the
// user as, when set. There is no parent-death signal outside Linux: a
// server whose test binary is killed (rather than ending normally, which
// stops every server) keeps running until it is killed by hand.
func serverAttr(_ syscall.Signal, as *runAs) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{}
	if as != nil {
		a.Credential = &syscall.Credential{Uid: as.uid, Gid: as.gid}
	}
	return a
}
