package main

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the kernel kill the child when the benchmark
// dies, however it dies (even kill -9), so that no server outlives it.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
