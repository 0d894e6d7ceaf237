package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/postgres/pgtest"
)

// stalledOut is a stdout whose reader stops reading once the service is up:
// it keeps what it was given until then, and every later Write blocks until
// the test ends.
type stalledOut struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	stalled bool
	release chan struct{}
}

func (o *stalledOut) Write(p []byte) (int, error) {
	o.mu.Lock()
	stalled := o.stalled
	if !stalled {
		o.buf.Write(p)
		o.stalled = strings.Contains(o.buf.String(), "listening on")
	}
	o.mu.Unlock()
	if stalled {
		<-o.release
	}
	return len(p), nil
}

func (o *stalledOut) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// TestLogReaderThatStopsDoesNotBlockRequests: with stdout on a reader that
// stopped reading, requests (far more than fill any log buffer) are still
// answered, the dropped lines are counted in /metrics, and shutdown ends.
func TestLogReaderThatStopsDoesNotBlockRequests(t *testing.T) {
	out := &stalledOut{release: make(chan struct{})}
	defer close(out.release)
	in := startWriting(t, out, nil, "--admin-token", domaintest.AdminToken, "--data", filepath.Join(t.TempDir(), "p.db"))

	client := &http.Client{Timeout: 5 * time.Second}
	get := func(path string, header ...string) (int, string, error) {
		return in.do(client, http.MethodGet, path, "", header...)
	}
	// About 300 bytes of log a request: 8000 of them are over 2 MB, twice
	// what the log holds in memory.
	const requests, workers = 8000, 8
	longID := strings.Repeat("r", 100)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < requests; i += workers {
				// Not a probe: probes write no access line.
				status, _, err := get("/categories", "X-Request-Id", longID)
				if err == nil && status != http.StatusOK {
					err = fmt.Errorf("status %d", status)
				}
				if err != nil {
					errs <- fmt.Errorf("request %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	status, body, err := get("/metrics", "Authorization", "Bearer "+domaintest.AdminToken)
	if err != nil || status != http.StatusOK {
		t.Fatalf("/metrics: %d %v", status, err)
	}
	m := regexp.MustCompile(`(?m)^petstore_log_lines_dropped_total (\d+)$`).FindStringSubmatch(body)
	if m == nil || m[1] == "0" {
		t.Errorf("petstore_log_lines_dropped_total: want > 0, got %v", m)
	}
	in.stopWithin(t, 10*time.Second)
}

// TestShutdownAbortsASlowBackup: a backup download whose client stopped
// reading does not keep the service from shutting down: run returns soon
// after --shutdown-timeout, and the data file is closed (it opens again).
func TestShutdownAbortsASlowBackup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	// Tens of MB: far more than the socket buffers between server and
	// client hold, so the copy is still running when shutdown comes.
	db, err := boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat := &store.Category{Name: "bulk"}
	if err := db.CreateCategory(context.Background(), cat); err != nil {
		t.Fatal(err)
	}
	if err := db.ImportPets(context.Background(), cat.ID, 100_000, store.StatusAvailable); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	in := start(t, nil, "--admin-token", domaintest.AdminToken, "--data", path, "--shutdown-timeout", "1s")

	dialer := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := dialer.Dial("tcp", strings.TrimPrefix(in.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /admin/backup HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\n\r\n", domaintest.AdminToken)
	res, err := http.ReadResponse(bufio.NewReaderSize(conn, 4096), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.ContentLength < 8<<20 {
		t.Fatalf("backup: status %d, %d bytes; want 200 and over 8 MiB", res.StatusCode, res.ContentLength)
	}
	// The client reads nothing more.

	in.stopWithin(t, 1*time.Second+5*time.Second)
	if !strings.Contains(in.out.String(), "aborting backups in flight") {
		t.Errorf("the log does not say that the backup was aborted:\n%s", in.out)
	}
	db, err = boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("the data file did not close: %v", err)
	}
	db.Close()
}

// childFileLimit is the limit on open files of the child process of
// TestOneClientCannotHoldTheDescriptors, which the parent cannot set for
// itself.
const childFileLimit = 200

func runConnChild() {
	runChild(func() error {
		lim := syscall.Rlimit{Cur: childFileLimit, Max: childFileLimit}
		return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	})
}

// startLimited starts the service in a child process whose limit on open
// files is childFileLimit, soft and hard, and returns its address.
func startLimited(t *testing.T, args ...string) string {
	t.Helper()
	args = append([]string{"--listen", "127.0.0.1:0", "--rate-limit", "0", "--admin-token", domaintest.AdminToken,
		"--data", filepath.Join(t.TempDir(), "p.db"), "--shutdown-timeout", "1s"}, args...)
	proc := startServiceChild(t, childCommand(t, args))
	base, err := proc.WaitOutput(20*time.Second, listeningOn)
	if err != nil {
		t.Fatalf("the service did not listen: %v\n%s", err, proc.Out)
	}
	return strings.Replace(strings.TrimPrefix(base, "http://"), "localhost", "127.0.0.1", 1)
}

// hold opens n connections from 127.0.0.1 to addr, each sending one
// request and then staying idle (what a client holding keep-alive
// connections does), and returns them.
func hold(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	d := net.Dialer{Timeout: 5 * time.Second}
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("after %d connections: %v", len(conns), err)
		}
		conns = append(conns, c)
		_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	}
	return conns
}

// answered counts the connections that got their answer (within a few
// seconds for all) and the ones closed without one.
func answered(conns []net.Conn) (ok, closed int) {
	deadline := time.Now().Add(5 * time.Second)
	for _, c := range conns {
		_ = c.SetReadDeadline(deadline)
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		switch {
		case err == nil && res.StatusCode == http.StatusOK:
			ok++
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET):
			closed++
		}
	}
	return ok, closed
}

// otherClientServed fails the test unless a client on another address
// (127.0.0.2) gets its answers on new connections.
func otherClientServed(t *testing.T, addr string) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	for i := range 3 {
		res, err := client.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatalf("another client, request %d: %v", i, err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("another client, request %d: status %d", i, res.StatusCode)
		}
	}
}

// TestOneClientCannotHoldTheDescriptors: under a limit of 200 open files,
// one address holding twice that many idle keep-alive connections does not
// keep another client out, with the per-client cap above the limit (idle
// connections are closed to make room) and below it (the client's extra
// connections are closed at once).
func TestOneClientCannotHoldTheDescriptors(t *testing.T) {
	if isChild() {
		runConnChild()
	}
	t.Run("idle connections make room", func(t *testing.T) {
		addr := startLimited(t) // the default cap, 256, is above the limit
		conns := hold(t, addr, 2*childFileLimit)
		otherClientServed(t, addr)
		if ok, _ := answered(conns); ok == 0 {
			t.Error("none of the held connections was answered")
		}
	})
	t.Run("per-client cap", func(t *testing.T) {
		addr := startLimited(t, "--max-client-conns", "20")
		conns := hold(t, addr, 30)
		ok, closed := answered(conns)
		if ok != 20 || closed != 10 {
			t.Errorf("30 connections from one address with a cap of 20: %d answered, %d closed; want 20 and 10", ok, closed)
		}
		otherClientServed(t, addr)
	})
}

// The child process of the tests below: the service, as its own process,
// so that its memory can be measured apart from the test's.
// startChild starts the service in a child process and returns its address
// and process id.
func startChild(t *testing.T, args ...string) (addr string, pid int) {
	t.Helper()
	args = append([]string{"--listen", "127.0.0.1:0", "--admin-token", domaintest.AdminToken,
		"--data", filepath.Join(t.TempDir(), "p.db"), "--shutdown-timeout", "1s"}, args...)
	cmd := childCommand(t, args)
	proc := startServiceChild(t, cmd)
	base, err := proc.WaitOutput(30*time.Second, listeningOn)
	if err != nil {
		t.Fatalf("the service did not listen: %v\n%s", err, proc.Out)
	}
	return strings.Replace(strings.TrimPrefix(base, "http://"), "localhost", "127.0.0.1", 1), cmd.Process.Pid
}

// rss is the resident memory of process pid, in bytes.
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/<pid>/status")
	return 0
}

// TestHalfSentHeadersCostLittle: 500 connections each send the largest
// request head the server reads (its 64 KiB limit, plus the 4 KiB net/http
// reads past it) but never its final CRLF. The service's memory grows by
// far less than 100 MB (it was about 1 MiB a connection), and the header
// timeout (--header-timeout, shortened here) closes every one.
func TestHalfSentHeadersCostLittle(t *testing.T) {
	if isChild() {
		runChild(func() error { return nil })
	}
	if testing.Short() {
		t.Skip("500 connections and a child process")
	}
	addr, pid := startChild(t, "--header-timeout", "5s", "--max-client-conns", "0", "--rate-limit", "0")
	idle := rss(t, pid)
	head := "GET /pets HTTP/1.1\r\nHost: localhost\r\nX-Big: " + strings.Repeat("v", 64<<10+4<<10-200)
	const n = 500
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range n {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	sent := time.Now()
	peak := rss(t, pid)
	for range 10 { // the server may still be reading what was sent
		time.Sleep(100 * time.Millisecond)
		peak = max(peak, rss(t, pid))
	}
	t.Logf("RSS idle %.1f MB, with %d half-sent heads of %d KB: %.1f MB (+%.1f MB)",
		float64(idle)/1e6, n, len(head)>>10, float64(peak)/1e6, float64(peak-idle)/1e6)
	// Under the race detector every allocation costs several times its
	// size: the bound there only catches the old cost (about 1 MiB a
	// connection, over 2 GB with the detector).
	bound := int64(100 << 20)
	if raceEnabled {
		bound = 600 << 20
	}
	if peak-idle > bound {
		t.Errorf("RSS grew by %d MB, want under %d", (peak-idle)>>20, bound>>20)
	}
	// Every connection is closed by the header timeout: its read ends
	// (EOF, a reset, or net/http's 408), long before this generous bound.
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection %d still open %v after its head", i, time.Since(sent).Round(time.Second))
		}
	}
	t.Logf("all closed %v after the heads were sent", time.Since(sent).Round(100*time.Millisecond))
}

// proxiedGet sends path on a new connection from 127.0.0.1 to addr, after
// a PROXY v1 header naming client when client is not empty, and returns
// the status (0: closed without an answer) and body.
func proxiedGet(t *testing.T, addr, client, path string, header ...string) (int, string) {
	t.Helper()
	return proxiedGetFrom(t, "127.0.0.1", addr, client, path, header...)
}

// proxiedGetFrom is proxiedGet on a connection from the address local.
func proxiedGetFrom(t *testing.T, local, addr, client, path string, header ...string) (int, string) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, port, _ := net.SplitHostPort(addr)
	req := "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + strings.Join(header, "") + "\r\n"
	if client != "" {
		req = fmt.Sprintf("PROXY TCP4 %s 127.0.0.1 40000 %s\r\n", client, port) + req
	}
	return domaintest.Exchange(c, req)
}

// TestRunReadsTheProxyProtocol: with --proxy-protocol-from naming the
// load balancer (here 127.0.0.1), the client a PROXY header carries is the
// one the access log names and the rate limit counts; a connection from
// the balancer without a header is closed unanswered.
func TestRunReadsTheProxyProtocol(t *testing.T) {
	in := start(t, nil, "--data", filepath.Join(t.TempDir(), "p.db"), "--admin-token", domaintest.AdminToken,
		"--proxy-protocol-from", "127.0.0.1", "--rate-limit", "0.5")
	addr := strings.Replace(strings.TrimPrefix(in.base, "http://"), "localhost", "127.0.0.1", 1)

	if status, body := proxiedGet(t, addr, "198.51.100.7", "/pets"); status != http.StatusOK {
		t.Fatalf("first request of 198.51.100.7: %d %s", status, body)
	}
	domaintest.WaitFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if !strings.Contains(in.out.String(), "remote=198.51.100.7") {
			return fmt.Errorf("no access log line with remote=198.51.100.7 in:\n%s", in.out)
		}
		return nil
	})
	status, body := proxiedGet(t, addr, "198.51.100.7", "/pets")
	var e struct {
		Code   string
		Status int
	}
	if status != http.StatusTooManyRequests || json.Unmarshal([]byte(body), &e) != nil || e.Code != "rate_limited" || e.Status != status {
		t.Errorf("second request of 198.51.100.7 at 0.5/s: %d %s, want 429 rate_limited", status, body)
	}
	if status, body := proxiedGet(t, addr, "198.51.100.8", "/pets"); status != http.StatusOK {
		t.Errorf("another client behind the same balancer: %d %s, want 200 (its own limit)", status, body)
	}
	if status, body := proxiedGet(t, addr, "", "/pets"); status != 0 {
		t.Errorf("balancer's connection without a header: %d %s, want it closed unanswered", status, body)
	}
	if status, body := proxiedGetFrom(t, "127.0.0.2", addr, "198.51.100.11", "/pets"); status != http.StatusBadRequest {
		t.Errorf("PROXY line from an untrusted source: %d %s, want 400 (a malformed request)", status, body)
	}
}

// TestRunCountsFailedCredentialsPerCarriedClient: the limit of failed
// credentials counts the client a PROXY header carries, so one client's
// wrong tokens do not lock out another behind the same balancer.
func TestRunCountsFailedCredentialsPerCarriedClient(t *testing.T) {
	in := start(t, nil, "--data", filepath.Join(t.TempDir(), "p.db"), "--admin-token", domaintest.AdminToken,
		"--proxy-protocol-from", "127.0.0.0/8")
	addr := strings.Replace(strings.TrimPrefix(in.base, "http://"), "localhost", "127.0.0.1", 1)
	wrongToken := "Authorization: Bearer " + strings.Repeat("x", 40) + "\r\n"
	var last int
	for range 11 {
		last, _ = proxiedGet(t, addr, "198.51.100.9", "/admin/project", wrongToken)
	}
	if last != http.StatusTooManyRequests {
		t.Errorf("11th wrong token from 198.51.100.9: %d, want 429", last)
	}
	if status, body := proxiedGet(t, addr, "198.51.100.10", "/admin/project", wrongToken); status != http.StatusUnauthorized {
		t.Errorf("a wrong token from another client behind the balancer: %d %s, want 401", status, body)
	}
}

func TestConfigProxyProtocolFrom(t *testing.T) {
	c, err := parseConfig([]string{"--proxy-protocol-from", "10.0.0.5, 10.1.0.0/16"}, func(k string) string {
		return map[string]string{"PETSTORE_PROXY_PROTOCOL_FROM": "192.0.2.1"}[k]
	}, io.Discard)
	if err != nil || strings.Join(c.proxyProtocolFrom, " ") != "10.0.0.5 10.1.0.0/16" {
		t.Errorf("flag: %v %v", c.proxyProtocolFrom, err)
	}
	c, err = parseConfig(nil, func(k string) string {
		return map[string]string{"PETSTORE_PROXY_PROTOCOL_FROM": "192.0.2.1,192.0.2.2"}[k]
	}, io.Discard)
	if err != nil || strings.Join(c.proxyProtocolFrom, " ") != "192.0.2.1 192.0.2.2" {
		t.Errorf("environment: %v %v", c.proxyProtocolFrom, err)
	}
	if _, err := parseConfig([]string{"--proxy-protocol-from", "lb.example.com"}, func(string) string { return "" }, io.Discard); err == nil {
		t.Error("a host name as --proxy-protocol-from: no error")
	}
}

// TestSeveralInstancesGuideWithHAProxy runs the HAProxy configuration of
// docs/several-instances.md in front of two instances, on loopback: the
// guide's addresses become the instances' (whose plain listeners stand in
// for 443 and 80: the test has no public CA), and its check interval a
// tenth of a second. The PROXY protocol's source is HAProxy's. Then the
// database stops: HAProxy marks both instances down, and clients still
// get the service's 503 JSON through the backup lines, never a dropped
// connection; the database comes back and writes go through again.
func TestSeveralInstancesGuideWithHAProxy(t *testing.T) {
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("haproxy is not installed (apt-get install haproxy); .ci/run installs it")
		}
		t.Skip("haproxy is not installed (apt-get install haproxy)")
	}
	cluster := pgtest.Private(t)
	databaseURL, err := cluster.NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	flags := pgFlags(databaseURL, "--proxy-protocol-from", "127.0.0.1")
	a := start(t, nil, flags...)
	b := start(t, nil, flags...)
	// The test's own calls come from another loopback address than
	// HAProxy's, so they send no PROXY header.
	_, body := callFrom(t, "127.0.0.5", a, "POST", "/admin/api-keys", `{"name":"haproxy"}`, adminAuth...)
	var key struct{ Secret string }
	if err := json.Unmarshal([]byte(body), &key); err != nil || key.Secret == "" {
		t.Fatalf("creating a key: %s", body)
	}

	dir := t.TempDir()
	socket := filepath.Join(dir, "haproxy.sock")
	front := freeLoopbackAddr(t)
	cfg := "global\n    stats socket " + socket + " mode 600 level admin\n\n" + guideHAProxyConfig(t, a, b, front, freeLoopbackAddr(t))
	if err := os.WriteFile(filepath.Join(dir, "haproxy.cfg"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(haproxy, "-db", "-f", filepath.Join(dir, "haproxy.cfg"))
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	through := &instance{base: "http://" + front}
	client := &http.Client{Timeout: 20 * time.Second}
	waitFor(t, "HAProxy marks both instances up", 20*time.Second, func() bool {
		st := haproxyStates(t, socket)
		return st["petstore_http/a"] == "UP" && st["petstore_http/b"] == "UP"
	})
	if code, body, err := through.do(client, "POST", "/categories", `{"name":"dogs"}`, "X-API-Key", key.Secret); err != nil || code != 201 {
		t.Fatalf("a write through HAProxy: %d %s %v\n%s", code, body, err, out)
	}

	if err := cluster.Halt(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "HAProxy marks both instances down", 20*time.Second, func() bool {
		st := haproxyStates(t, socket)
		return strings.HasPrefix(st["petstore_http/a"], "DOWN") && strings.HasPrefix(st["petstore_http/b"], "DOWN")
	})
	for i := range 20 {
		method, path, body := "GET", "/pets", ""
		if i%2 == 0 {
			method, path, body = "POST", "/categories", `{"name":"cats"}`
		}
		req, _ := http.NewRequest(method, through.base+path, strings.NewReader(body))
		req.Header.Set("X-API-Key", key.Secret)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s through HAProxy with the database down: %v (a dropped connection)", method, path, err)
		}
		var e struct{ Code string }
		decodeErr := json.NewDecoder(res.Body).Decode(&e)
		res.Body.Close()
		if res.StatusCode != 503 || decodeErr != nil || e.Code != "database_unavailable" || res.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s through HAProxy with the database down: %d %q, want 503 database_unavailable with Retry-After", method, path, res.StatusCode, e.Code)
		}
	}

	if err := cluster.Resume(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "writes go through HAProxy again", 20*time.Second, func() bool {
		code, _, err := through.do(client, "POST", "/categories", `{"name":"birds"}`, "X-API-Key", key.Secret)
		return err == nil && code == 201
	})
}

// guideHAProxyConfig is the guide's HAProxy configuration, pointed at a and
// b on loopback, its frontends on https and http.
func guideHAProxyConfig(t *testing.T, a, b *instance, https, http string) string {
	t.Helper()
	guide, err := os.ReadFile("docs/several-instances.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```\n(defaults\n.*?)```").FindSubmatch(guide)
	if m == nil {
		t.Fatal("docs/several-instances.md has no HAProxy configuration (a block that starts with defaults)")
	}
	addr := func(in *instance) string { return strings.TrimPrefix(in.base, "http://") }
	r := strings.NewReplacer(
		"bind :443", "bind "+https, "bind :80", "bind "+http,
		"10.0.0.11:443", addr(a), "10.0.0.11:80", addr(a),
		"10.0.0.12:443", addr(b), "10.0.0.12:80", addr(b),
		" port 8080", "", "inter 2s", "inter 100ms",
	)
	cfg := r.Replace(string(m[1]))
	if strings.Contains(cfg, "10.0.0.") {
		t.Fatalf("the guide's configuration has addresses the test does not replace:\n%s", cfg)
	}
	return cfg
}

// haproxyStates reads HAProxy's server states ("backend/server" → UP,
// DOWN…) from its stats socket.
func haproxyStates(t *testing.T, socket string) map[string]string {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		return nil // not listening yet
	}
	defer conn.Close()
	fmt.Fprint(conn, "show stat\n")
	states := map[string]string{}
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if len(f) > 17 && !strings.HasPrefix(f[0], "#") {
			states[f[0]+"/"+f[1]] = f[17]
		}
	}
	return states
}
