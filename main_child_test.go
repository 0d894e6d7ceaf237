package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"petstore/domains/domaintest"
)

// Tests that need run() in a process of its own (a limit on open files,
// sockets passed as systemd passes them) start the test binary again as
// their child: childCommand marks it with childEnv and its arguments, and
// the test, seeing the mark, calls runChild instead of testing.
const (
	childEnv     = "PETSTORE_TEST_CHILD"
	childArgsEnv = "PETSTORE_TEST_CHILD_ARGS"
)

// isChild reports whether this process is a test's child.
func isChild() bool { return os.Getenv(childEnv) != "" }

// runChild runs the service with the arguments childCommand gave, after
// prepare, until SIGTERM, and exits.
func runChild(prepare func() error) {
	if err := prepare(); err != nil {
		fmt.Println("prepare:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	args := strings.Split(os.Getenv(childArgsEnv), "\x1f")
	if err := run(ctx, args, func(string) string { return "" }, os.Stdout); err != nil {
		fmt.Println("run:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// childCommand is the test binary as t's child, running the service with
// args; prefix, when given, is the program and arguments that run it.
func childCommand(t *testing.T, args []string, prefix ...string) *exec.Cmd {
	self := []string{os.Args[0], "-test.run=^" + t.Name() + "$"}
	all := append(prefix, self...)
	cmd := exec.Command(all[0], all[1:]...)
	cmd.Env = append(os.Environ(), childEnv+"=1", childArgsEnv+"="+strings.Join(args, "\x1f"))
	return cmd
}

// startServiceChild starts cmd, and stops it with SIGTERM when the test ends.
func startServiceChild(t *testing.T, cmd *exec.Cmd) *domaintest.Process {
	t.Helper()
	proc := domaintest.StartProcess(t, cmd)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-proc.Done():
		case <-time.After(10 * time.Second):
			t.Errorf("the service did not stop after SIGTERM:\n%s", proc.Out)
		}
	})
	return proc
}
