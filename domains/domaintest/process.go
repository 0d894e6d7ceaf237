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

// Process is a program a test started, with its output (stdout and stderr
// together) kept in Out.
type Process struct {
	Cmd  *exec.Cmd
	Out  *SyncBuffer
	done chan struct{} // closed when the process has exited
}

// StartProcess starts cmd, so that it dies with the test binary even when
// that dies without running its cleanups, and kills it when tb's test ends.
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

// exited reports whether the process has exited.
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

// bindFailed reports whether the program logged that it lost a port: some
// servers (challtestsrv) keep running without the listener.
func (p *Process) bindFailed() bool {
	s := p.Out.String()
	return strings.Contains(s, "address already in use") || strings.Contains(s, "bind:")
}

// waitReady calls ready until it returns nil, and fails when the process
// exits or logs that it lost a port first, or within has passed.
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
			// A listener that was taken was logged before the server
			// answered: the answer came from someone else's.
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

// WaitOutput waits until the output matches re, and returns re's first
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

// startServer starts a tool's server and waits until ready says it serves,
// starting it again when it lost a port race (a port found free can be
// taken by another test's server before this one binds it): attempt picks
// new ports and returns the command and its readiness check. The server's
// output is logged when the test fails.
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
