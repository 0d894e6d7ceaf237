package pgtest

import (
	"os"
	"strconv"
	"syscall"
)

// Pause stops every process of the cluster's server (SIGSTOP), the
// postmaster and its backends: a database host frozen, swapping or cut
// off, whose sockets stay open and answer nothing. Continue undoes it.
func (c *Cluster) Pause() error { return c.signalAll(syscall.SIGSTOP) }

// Continue lets a paused server run again (SIGCONT).
func (c *Cluster) Continue() error { return c.signalAll(syscall.SIGCONT) }

// signalAll sends sig to the postmaster and then to each of its children.
func (c *Cluster) signalAll(sig syscall.Signal) error {
	pm, err := c.PostmasterPID()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pm, sig); err != nil {
		return err
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	parent := strconv.Itoa(pm)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f, err := procStat(pid); err == nil && f[1] == parent {
			_ = syscall.Kill(pid, sig)
		}
	}
	return nil
}
