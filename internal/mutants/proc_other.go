//go:build !unix

package mutants

import "os/exec"

// setGroup leaves cmd as it is: outside Unix a cancelled go test is killed
// alone.
func setGroup(*exec.Cmd) {}

// lockScratch does not lock outside Unix: keep one run per scratch copy.
func lockScratch(string) (func(), error) { return func() {}, nil }
