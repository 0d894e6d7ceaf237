package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"petstore/domains/domaintest"
)

func runActivationChild() { runChild(func() error { return nil }) }

// activationArgs are the flags of a child on a fresh data file; --listen
// names an address this machine cannot bind (TEST-NET-1), so that a child
// that binds its flag instead of taking the passed socket fails.
func activationArgs(t *testing.T, more ...string) []string {
	return append([]string{"--listen", "192.0.2.1:80", "--rate-limit", "0", "--admin-token", domaintest.AdminToken,
		"--data", filepath.Join(t.TempDir(), "p.db"), "--shutdown-timeout", "1s"}, more...)
}

// startActivated starts the child with the listening sockets lns as
// descriptors 3 and up, LISTEN_FDS and, unless names is nil,
// LISTEN_FDNAMES, and LISTEN_PID set to the child's own pid by the shell
// that execs it (the pid is unknown before the start).
func startActivated(t *testing.T, lns []*net.TCPListener, names []string, args []string) *domaintest.Process {
	t.Helper()
	cmd := childCommand(t, args, "/bin/sh", "-c", `LISTEN_PID=$$ exec "$0" "$@"`)
	cmd.Env = append(cmd.Env, fmt.Sprintf("LISTEN_FDS=%d", len(lns)))
	if names != nil {
		cmd.Env = append(cmd.Env, "LISTEN_FDNAMES="+strings.Join(names, ":"))
	}
	for _, ln := range lns {
		f, err := ln.File()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	}
	return startServiceChild(t, cmd)
}

func loopbackListener(t *testing.T) *net.TCPListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.(*net.TCPListener)
}

// getHealthz GETs /healthz at addr and returns the status.
func getHealthz(t *testing.T, addr string) int {
	t.Helper()
	c := &http.Client{Timeout: 20 * time.Second}
	res, err := c.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz on the passed socket: %v", err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode
}

// TestSocketActivation: sockets passed as systemd passes them (LISTEN_FDS,
// LISTEN_FDNAMES) replace the flags' binds: a socket named listen, and a
// single unnamed one, serve --listen; a socket for a listener that is off,
// or with a name no flag has, stops the start with the reason.
func TestSocketActivation(t *testing.T) {
	if isChild() {
		runActivationChild()
	}
	for _, tc := range []struct {
		name  string
		names []string
	}{
		{"named listen", []string{"listen"}},
		{"one unnamed", nil},
		{"one named after its unit", []string{"petstore.socket"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln := loopbackListener(t)
			proc := startActivated(t, []*net.TCPListener{ln}, tc.names, activationArgs(t))
			// The first request may arrive before the child accepts: the
			// kernel keeps it in the socket's backlog.
			if status := getHealthz(t, ln.Addr().String()); status != http.StatusOK {
				t.Fatalf("GET /healthz: %d\n%s", status, proc.Out)
			}
			base, err := proc.WaitOutput(20*time.Second, listeningOn)
			if err != nil || !strings.HasSuffix(base, ":"+fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)) {
				t.Errorf("the banner says %q (%v), want the passed socket %s", base, err, ln.Addr())
			}
		})
	}
	for _, tc := range []struct {
		name  string
		names []string
		want  string
	}{
		{"a socket for a listener that is off", []string{"listen", "https"}, "sockets were passed for [https]"},
		{"a name no flag has", []string{"listen", "admin"}, `systemd passed a socket named "admin"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lns := []*net.TCPListener{loopbackListener(t), loopbackListener(t)}
			args := activationArgs(t)
			args[1] = "127.0.0.1:0" // were the socket ignored, --listen would still work
			proc := startActivated(t, lns, tc.names, args)
			select {
			case <-proc.Done():
			case <-time.After(30 * time.Second):
				t.Fatalf("the service started:\n%s", proc.Out)
			}
			if out := proc.Out.String(); !strings.Contains(out, tc.want) {
				t.Errorf("the output does not say %q:\n%s", tc.want, out)
			}
		})
	}
}

// TestSocketActivationBySystemd: the same through Debian's
// systemd-socket-activate, which binds the address, waits for the first
// connection and only then starts the service with the socket.
func TestSocketActivationBySystemd(t *testing.T) {
	if isChild() {
		runActivationChild()
	}
	tool, err := exec.LookPath("systemd-socket-activate")
	if err != nil {
		t.Skip("systemd-socket-activate is not installed (Debian: apt install systemd)")
	}
	// systemd-socket-activate binds the address itself: a port the kernel
	// just handed out and that was closed again.
	free := loopbackListener(t)
	addr := free.Addr().String()
	free.Close()
	args := activationArgs(t)
	cmd := childCommand(t, args, tool, "--listen="+addr, "--fdname=listen",
		"--setenv="+childEnv+"=1", "--setenv="+childArgsEnv+"="+strings.Join(args, "\x1f"))
	proc := startServiceChild(t, cmd)
	var status int
	for deadline := time.Now().Add(20 * time.Second); ; {
		// The tool may not have bound the address yet.
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			status = getHealthz(t, addr)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("systemd-socket-activate did not listen on %s:\n%s", addr, proc.Out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status != http.StatusOK {
		t.Fatalf("GET /healthz: %d\n%s", status, proc.Out)
	}
}

// TestRestartWithPassedSocketRefusesNothing: while 64 clients send reads
// and durable writes, each on a new connection, the service is stopped and
// a new process started on the same passed socket, as systemd restarts a
// socket-activated service (the socket stays open in systemd meanwhile).
// No connection is refused or reset and every request gets its answer:
// connections made in between wait in the socket's backlog. The longest
// wait is logged.
func TestRestartWithPassedSocketRefusesNothing(t *testing.T) {
	if isChild() {
		runActivationChild()
	}
	if testing.Short() {
		t.Skip("starts the service twice in child processes")
	}
	ln := loopbackListener(t)
	addr := ln.Addr().String()
	args := activationArgs(t)
	first := startActivated(t, []*net.TCPListener{ln}, []string{"listen"}, args)
	if status := getHealthz(t, addr); status != http.StatusOK {
		t.Fatalf("GET /healthz: %d\n%s", status, first.Out)
	}
	c := &crashClient{t: t, base: "http://" + addr, http: &http.Client{Timeout: 30 * time.Second}}
	var key struct{ Secret string }
	if st := c.call(context.Background(), http.MethodPost, "/admin/api-keys", `{"name":"restart"}`, "Bearer "+domaintest.AdminToken, &key); st != http.StatusCreated {
		t.Fatalf("POST /admin/api-keys: %d", st)
	}
	c.key = key.Secret
	var cat struct{ ID int64 }
	c.mustCall(http.MethodPost, "/categories", `{"name":"dogs"}`, http.StatusCreated, &cat)
	var pet struct{ ID int64 }
	c.mustCall(http.MethodPost, "/pets", fmt.Sprintf(`{"name":"Rex","categoryId":%d}`, cat.ID), http.StatusCreated, &pet)

	// Each request on a new connection: every one of them goes through
	// the listening socket, the moment of the hand-over included.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	ctx, stop := context.WithCancel(context.Background())
	type result struct {
		ok, failed int
		longest    time.Duration
		firstErr   error
	}
	results := make(chan result, 64)
	for w := range 64 {
		go func() {
			var r result
			for ctx.Err() == nil {
				method, path, body := http.MethodGet, fmt.Sprintf("/pets/%d", pet.ID), ""
				if w%2 == 1 {
					method, path, body = http.MethodPost, "/pets", fmt.Sprintf(`{"name":"w%d","categoryId":%d}`, w, cat.ID)
				}
				req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
				req.Header.Set("X-API-Key", key.Secret)
				req.Header.Set("Content-Type", "application/json")
				t0 := time.Now()
				res, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode >= 300 {
						err = fmt.Errorf("%s %s: %d", method, path, res.StatusCode)
					}
				}
				r.longest = max(r.longest, time.Since(t0))
				if err != nil {
					r.failed++
					if r.firstErr == nil {
						r.firstErr = err
					}
				} else {
					r.ok++
				}
			}
			results <- r
		}()
	}
	time.Sleep(300 * time.Millisecond) // load before the restart
	_ = first.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-first.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("the first process did not stop:\n%s", first.Out)
	}
	second := startActivated(t, []*net.TCPListener{ln}, []string{"listen"}, args)
	if _, err := second.WaitOutput(30*time.Second, listeningOn); err != nil {
		t.Fatalf("the second process did not start: %v\n%s", err, second.Out)
	}
	time.Sleep(300 * time.Millisecond) // load after the restart
	stop()
	var total result
	for range 64 {
		r := <-results
		total.ok += r.ok
		total.failed += r.failed
		total.longest = max(total.longest, r.longest)
		if total.firstErr == nil {
			total.firstErr = r.firstErr
		}
	}
	t.Logf("%d requests answered, %d failed; the longest took %v", total.ok, total.failed, total.longest)
	if total.failed > 0 {
		t.Errorf("%d requests failed, the first: %v", total.failed, total.firstErr)
	}
	if total.ok == 0 {
		t.Error("no request was answered")
	}
}

// unitValues returns the values of key in a systemd unit file.
func unitValues(t *testing.T, path, key string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+"="); ok {
			out = append(out, v)
		}
	}
	return out
}

// TestSystemdUnitFiles: the service unit's flags with the socket unit's
// socket (its name; a loopback port instead of its fixed address) start
// the service, which answers on that socket.
func TestSystemdUnitFiles(t *testing.T) {
	if isChild() {
		runActivationChild()
	}
	names := unitValues(t, "docs/systemd/petstore.socket", "FileDescriptorName")
	listens := unitValues(t, "docs/systemd/petstore.socket", "ListenStream")
	execs := unitValues(t, "docs/systemd/petstore.service", "ExecStart")
	if len(names) != 1 || len(listens) != 1 || len(execs) != 1 {
		t.Fatalf("socket names %q, ListenStream %q, ExecStart %q: want one each", names, listens, execs)
	}
	args := strings.Fields(execs[0])[1:]
	for i, a := range args {
		if a == "--listen" && args[i+1] != listens[0] {
			t.Errorf("--listen %s in the service, ListenStream=%s in the socket", args[i+1], listens[0])
		}
		if a == "--data" {
			args[i+1] = filepath.Join(t.TempDir(), "petstore.db")
		}
	}
	args = append(args, "--admin-token", domaintest.AdminToken)
	ln := loopbackListener(t)
	proc := startActivated(t, []*net.TCPListener{ln}, names, args)
	if status := getHealthz(t, ln.Addr().String()); status != http.StatusOK {
		t.Fatalf("GET /healthz: %d\n%s", status, proc.Out)
	}
}
