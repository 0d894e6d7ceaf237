package domaintest

import (
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Process is a program a test started, its stdout and stderr kept in Out.
type Process struct {
	Cmd  *exec.Cmd
	Out  *SyncBuffer
	done chan struct{} // closed when the process has exited
}

// StartProcess starts cmd so that it dies with the test binary, even one
// dying without cleanups, and kills it when tb's test ends.
func StartProcess(tb testing.TB, cmd *exec.Cmd) *Process {
	tb.Helper()
	p := &Process{Cmd: cmd, Out: &SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.Out, p.Out
	if err := start(cmd); err != nil {
		tb.Fatalf("domaintest: starting %s: %v", cmd.Path, err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(func() { _ = p.Kill() })
	return p
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

func (p *Process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Process) Kill() error {
	if p.exited() {
		return nil
	}
	_ = p.Cmd.Process.Kill()
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s did not die after SIGKILL", p.Cmd.Path)
	}
}

// bindFailed reports whether the program logged losing a port: some
// servers (challtestsrv) keep running without the listener.
func (p *Process) bindFailed() bool {
	s := p.Out.String()
	return strings.Contains(s, "address already in use") || strings.Contains(s, "bind:")
}

// waitReady calls ready until nil, failing when the process exits or logs
// losing a port first, or within has passed.
func (p *Process) waitReady(within time.Duration, ready func() error) error {
	deadline := time.Now().Add(within)
	for {
		if p.exited() {
			return errors.New("it exited")
		}
		if p.bindFailed() {
			return errors.New("a port was taken")
		}
		err := ready()
		if err == nil {
			// A lost listener is logged before the answer, which was then someone
			// else's.
			if p.bindFailed() || p.exited() {
				return errors.New("a port was taken")
			}
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitOutput waits until the output matches re and returns its first
// submatch.
func (p *Process) WaitOutput(within time.Duration, re *regexp.Regexp) (string, error) {
	var found string
	err := p.waitReady(within, func() error {
		m := re.FindStringSubmatch(p.Out.String())
		if m == nil {
			return fmt.Errorf("no output matching %s", re)
		}
		found = m[1]
		return nil
	})
	return found, err
}

// startServer starts a tool's server and waits until ready, starting it
// again when it lost a port race to another test's server: attempt picks
// new ports and returns the command and its readiness check. Its output is
// logged when the test fails.
func startServer(tb testing.TB, name string, within time.Duration, attempt func() (*exec.Cmd, func() error)) *Process {
	tb.Helper()
	var lastErr error
	for range 5 {
		cmd, ready := attempt()
		p := StartProcess(tb, cmd)
		if err := p.waitReady(within, ready); err != nil {
			_ = p.Kill()
			lastErr = fmt.Errorf("%s did not start: %v\n%s", name, err, p.Out.Tail())
			continue
		}
		tb.Cleanup(func() {
			if tb.Failed() {
				tb.Logf("domaintest: %s output:\n%s", name, p.Out.Tail())
			}
		})
		return p
	}
	tb.Fatalf("domaintest: %v", lastErr)
	return nil
}
