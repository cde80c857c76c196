//go:build unix && !linux

package main

import (
	"os"
	"syscall"
)

// platformNote is what tenure run -h says of this platform.
const platformNote = `On this system (not Linux) there is no child subreaper: a process that
leaves the command's process group (setsid, setpgid) escapes it and is
not stopped at the end of the term.`

// adoptOrphans does nothing: outside Linux the supervisor cannot adopt the
// command's orphans (see platformNote).
func adoptOrphans() error { return nil }

// nameSelf does nothing: the supervisor runs under the binary's own name.
func nameSelf() {}

// commandAttr puts the command in a process group of its own. There is no
// parent-death signal: if the supervisor itself is killed, the command
// runs on (the supervisor is killed only by hand: tenure run's own death
// reaches it through the lifeline).
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// selfExecutable is the running tenure binary.
func selfExecutable() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return os.Args[0]
}

// descendants cannot be found without a subreaper: the process group
// stands for the tree.
func descendants() []int { return nil }
