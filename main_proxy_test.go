package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store/postgres/pgtest"
)

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
