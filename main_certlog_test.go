package main

import (
	"fmt"
	stdlog "log"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"petstore/domains/domaintest"
)

// TestNothingReachesStderr runs the service as a process of its own and
// has it obtain a certificate from a real ACME CA, with its challenges,
// then stops it: everything it logged, certmagic's lines included, went
// through the service's log on stdout, and its stderr stayed empty.
func TestNothingReachesStderr(t *testing.T) {
	if isChild() {
		runChild(func() error { return nil })
	}
	dns, pebble, rootFile := startACME(t)
	tlsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(pebble.TLSPort))
	args := append([]string{
		"--listen", "127.0.0.1:0", "--rate-limit", "0",
		"--data", filepath.Join(t.TempDir(), "petstore.db"),
		"--https-listen", tlsAddr,
		"--dns-resolver", dns.Addr(), "--dns-allow-private",
	}, customDomainFlags(pebble, rootFile)...)
	cmd := childCommand(t, args)
	var stdout, stderr domaintest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	var in *instance
	domaintest.WaitFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(stdout.String())
		if m == nil {
			return fmt.Errorf("no 'listening on' line in:\n%s", stdout.String())
		}
		in = &instance{base: m[1], out: &stdout}
		return nil
	})
	if code, body := in.call(t, "PATCH", "/admin/project", `{"plan":"pro"}`, adminAuth...); code != 200 {
		t.Fatalf("PATCH project: %d %s", code, body)
	}
	if code, body := in.call(t, "POST", "/admin/domains", `{"name":"api.shop.test"}`, adminAuth...); code != 201 {
		t.Fatalf("add: %d %s", code, body)
	}
	dns.SetCNAME(t, "api.shop.test", "cname.petstore.test")
	if code, body := in.call(t, "POST", "/admin/domains/api.shop.test/verify", "", adminAuth...); code != 200 {
		t.Fatalf("verify: %d %s", code, body)
	}
	domaintest.WaitFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if _, body := in.call(t, "GET", "/admin/domains/api.shop.test", "", adminAuth...); !strings.Contains(body, `"state":"issued"`) {
			return fmt.Errorf("no certificate: %s", body)
		}
		return nil
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err
		if err != nil {
			t.Errorf("the service exited with %v:\n%s", err, stdout.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the service did not stop after SIGTERM:\n%s", stdout.String())
	}
	if s := stderr.String(); s != "" {
		t.Errorf("the service wrote to stderr:\n%s", s)
	}
}

// TestStandardLogReachesTheServiceLog: lines that libraries write through
// the standard log package (certmagic's challenge servers and worker
// panics do) land in the service's log while it runs.
func TestStandardLogReachesTheServiceLog(t *testing.T) {
	in := start(t, nil, "--data", filepath.Join(t.TempDir(), "petstore.db"))
	stdlog.Printf("[ERROR] a line of a library through the standard log")
	waitFor(t, "the line in the service's log", 5*time.Second, func() bool {
		return strings.Contains(in.out.String(), "a line of a library through the standard log")
	})
}
