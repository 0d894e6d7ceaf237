//go:build !linux

package domaintest

import "os/exec"

// start starts cmd. Outside Linux nothing kills it if the test binary dies
// without running its cleanups.
func start(cmd *exec.Cmd) error { return cmd.Start() }
