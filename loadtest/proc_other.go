//go:build !linux

package main

import "os/exec"

// setParentDeathSignal does nothing here: the benchmark needs Linux's /proc
// and refuses to run elsewhere; this only keeps the package compiling.
func setParentDeathSignal(cmd *exec.Cmd) {}
