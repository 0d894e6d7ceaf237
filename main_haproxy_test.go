package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"petstore/store/postgres/pgtest"
)

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
