package pgtest

import "syscall"

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
	return children(pm, func(pid int, _ []string) { _ = syscall.Kill(pid, sig) })
}
