package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// platformNote is what tenure run -h says of this platform.
const platformNote = `On Linux, every process the command starts is stopped with it, even one
that leaves its process group: the supervisor is a child subreaper.`

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from <linux/prctl.h>.
const prSetChildSubreaper = 36

// adoptOrphans makes the supervisor a child subreaper: every process of
// the command's tree that loses its parent is re-parented to the
// supervisor, so descendants finds it and the supervisor reaps it.
func adoptOrphans() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", errno)
	}
	return nil
}

// nameSelf names the supervisor "tenure" in ps and top, instead of "exe"
// (it runs as /proc/self/exe).
func nameSelf() { _ = os.WriteFile("/proc/self/comm", []byte("tenure"), 0) }

// commandAttr puts the command in a process group of its own, and has the
// kernel kill it if the supervisor dies.
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// selfExecutable is the running tenure binary, even if its file was
// replaced or removed since it started.
func selfExecutable() string { return "/proc/self/exe" }

// descendants returns the PIDs of every descendant of this process, from
// the parent PIDs in /proc.
func descendants() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := []int{os.Getpid()}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parentOf reads a process's parent PID from /proc/PID/stat, whose second
// field (the command name, in parentheses) may hold spaces and ')'.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:]) // state, ppid, ...
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	return ppid, err == nil
}
