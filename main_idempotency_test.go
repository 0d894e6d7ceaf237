package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store/postgres/pgtest"
)

// TestIdempotentOrderSurvivesKillNine: the service is killed with SIGKILL
// right after a POST /store/orders with an Idempotency-Key commits, before
// the client has read a byte of the answer. The client retries with the
// same key and gets the original order, marked Idempotent-Replayed, and
// the stock is taken once. On bbolt the retry goes to the service
// restarted on the same file; on PostgreSQL to a second instance on the
// same database.
func TestIdempotentOrderSurvivesKillNine(t *testing.T) {
	parallel(t)
	onEachStoreAfterKill(t, killedAfterCommit)
}

// onEachStoreAfterKill runs killed on bbolt, where the retry goes to the
// service restarted on the same file, and on PostgreSQL, where it goes to
// a second instance on the same database, up before the kill.
func onEachStoreAfterKill(t *testing.T, killed func(t *testing.T, args []string, retry func() string)) {
	if isChild() {
		runChild(func() error { return nil })
	}
	if testing.Short() {
		t.Skip("starts and kills the service")
	}
	t.Run("bbolt", func(t *testing.T) {
		args := []string{"--data", filepath.Join(t.TempDir(), "p.db")}
		killed(t, args, func() string { return startKeyed(t, args) })
	})
	t.Run("postgres", func(t *testing.T) {
		args := []string{"--database", pgtest.URL(t)}
		b := startKeyed(t, args)
		killed(t, args, func() string { return b })
	})
}

// startKeyed starts the service as a child with args and returns its base URL.
func startKeyed(t *testing.T, args []string) string {
	t.Helper()
	_, base := startKeyedProc(t, args)
	return base
}

// startKeyedProc is startKeyed with the process.
func startKeyedProc(t *testing.T, args []string) (*domaintest.Process, string) {
	t.Helper()
	all := append([]string{"--listen", "127.0.0.1:0", "--rate-limit", "0", "--admin-token", domaintest.AdminToken, "--shutdown-timeout", "1s"}, args...)
	proc := startServiceChild(t, childCommand(t, all))
	// A generous bound: the child is the race-built test binary, slow to
	// start on a loaded machine.
	base, err := proc.WaitOutput(90*time.Second, listeningOn)
	if err != nil {
		t.Fatalf("the service did not listen: %v\n%s", err, proc.Out)
	}
	return proc, strings.Replace(base, "localhost", "127.0.0.1", 1)
}

// killedAfterCommit runs the service with args, places an order through a
// relay that kills the service (SIGKILL) as soon as the answer's first
// byte arrives, so after the commit, and drops the client's connection;
// then it retries with the same key at the service retry starts.
func killedAfterCommit(t *testing.T, args []string, retry func() string) {
	proc, base := startKeyedProc(t, args)
	c := &keyClient{t: t, http: &http.Client{Timeout: 10 * time.Second}}
	var key struct{ Secret string }
	c.call(base, "POST", "/admin/api-keys", `{"name":"crash"}`, http.Header{"Authorization": {"Bearer " + domaintest.AdminToken}}, 201, &key)
	c.key = key.Secret
	var cat, pet, order struct{ ID, Quantity int64 }
	c.call(base, "POST", "/categories", `{"name":"dogs"}`, nil, 201, &cat)
	c.call(base, "POST", "/pets", fmt.Sprintf(`{"name":"Rex","categoryId":%d}`, cat.ID), nil, 201, &pet)
	c.call(base, "PUT", fmt.Sprintf("/store/inventory/%d", pet.ID), `{"quantity":10}`, nil, 200, nil)

	body := fmt.Sprintf(`{"petId":%d,"quantity":3}`, pet.ID)
	keyed := http.Header{"Idempotency-Key": {"crash-order-1"}}
	c.sendAndKill(proc, base, "POST", "/store/orders", body, keyed)

	next := retry()
	res := c.call(next, "POST", "/store/orders", body, keyed, 201, &order)
	if res.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the retry after the kill is not a replay: Idempotent-Replayed %q", res.Header.Get("Idempotent-Replayed"))
	}
	if order.ID == 0 || order.Quantity != 3 || res.Header.Get("Location") != fmt.Sprintf("/store/orders/%d", order.ID) {
		t.Errorf("the replayed order: %+v, Location %q", order, res.Header.Get("Location"))
	}
	var orders []struct{ ID int64 }
	c.call(next, "GET", fmt.Sprintf("/store/orders?petId=%d", pet.ID), "", nil, 200, &orders)
	if len(orders) != 1 || orders[0].ID != order.ID {
		t.Errorf("orders of the pet: %+v, want the one order %d", orders, order.ID)
	}
	var item struct{ Quantity int }
	c.call(next, "GET", fmt.Sprintf("/store/inventory/%d", pet.ID), "", nil, 200, &item)
	if item.Quantity != 7 {
		t.Errorf("stock %d after the order and its retry, want 7: taken once", item.Quantity)
	}
}

// sendAndKill sends the request through a relay (killingRelay) that
// kills proc with SIGKILL as soon as the answer's first byte arrives, so
// after the commit, and waits until proc is gone: the client never reads
// the answer.
func (c *keyClient) sendAndKill(proc *domaintest.Process, base, method, path, body string, h http.Header) {
	t := c.t
	t.Helper()
	relay := killingRelay(t, strings.TrimPrefix(base, "http://"), func() {
		if err := proc.Kill(); err != nil {
			t.Error(err)
		}
	})
	req := c.request("http://"+relay, method, path, body, h)
	if res, err := (&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}).Do(req); err == nil {
		res.Body.Close()
		t.Fatalf("the client read an answer (%d) through the relay that kills the service", res.StatusCode)
	}
	select {
	case <-proc.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the service is still running after SIGKILL")
	}
}

// killingRelay forwards one connection to target and, when the first byte
// of the answer arrives, calls kill and closes the client's side without
// passing anything on.
func killingRelay(t *testing.T, target string, kill func()) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		client, err := ln.Accept()
		if err != nil {
			return
		}
		defer client.Close()
		server, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		defer server.Close()
		go func() { _, _ = io.Copy(server, client) }()
		var first [1]byte
		if _, err := server.Read(first[:]); err == nil {
			kill()
		}
	}()
	return ln.Addr().String()
}

// keyClient calls the service with its API key on writes.
type keyClient struct {
	t    *testing.T
	http *http.Client
	key  string
}

func (c *keyClient) request(base, method, path, body string, h http.Header) *http.Request {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" && method != "GET" {
		req.Header.Set("X-API-Key", c.key)
	}
	return req
}

// call sends a request, wants status, and decodes the answer into out.
func (c *keyClient) call(base, method, path, body string, h http.Header, status int, out any) *http.Response {
	c.t.Helper()
	res, err := c.http.Do(c.request(base, method, path, body, h))
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != status {
		c.t.Fatalf("%s %s: %d %s, want %d", method, path, res.StatusCode, data, status)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			c.t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	return res
}

// TestIdempotentAPIKeySurvivesKillNine: the service is killed with SIGKILL
// right after a POST /admin/api-keys with an Idempotency-Key commits,
// before the client has read a byte of the answer, the only one that
// shows the new secret. The retry with the same key gets that secret,
// marked Idempotent-Replayed, the secret authenticates, and one key was
// created. On bbolt the retry goes to the service restarted on the same
// file; on PostgreSQL to a second instance on the same database.
func TestIdempotentAPIKeySurvivesKillNine(t *testing.T) {
	parallel(t)
	onEachStoreAfterKill(t, apiKeyKilledAfterCommit)
}

func apiKeyKilledAfterCommit(t *testing.T, args []string, retry func() string) {
	proc, base := startKeyedProc(t, args)
	c := &keyClient{t: t, http: &http.Client{Timeout: 10 * time.Second}}
	keyed := http.Header{"Authorization": {"Bearer " + domaintest.AdminToken}, "Idempotency-Key": {"8e03978e-40d5-43e8-bc93-6894a57f9324"}}
	c.sendAndKill(proc, base, "POST", "/admin/api-keys", `{"name":"crash"}`, keyed)

	next := retry()
	var key struct {
		ID     int64
		Name   string
		Secret string
	}
	res := c.call(next, "POST", "/admin/api-keys", `{"name":"crash"}`, keyed, 201, &key)
	if res.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the retry after the kill is not a replay: Idempotent-Replayed %q", res.Header.Get("Idempotent-Replayed"))
	}
	if key.Name != "crash" || !strings.HasPrefix(key.Secret, "psk_") {
		t.Fatalf("the replayed key: %+v", key)
	}
	c.key = key.Secret
	c.call(next, "POST", "/categories", `{"name":"dogs"}`, nil, 201, nil)
	var keys []struct{ Name string }
	c.call(next, "GET", "/admin/api-keys", "", http.Header{"Authorization": {"Bearer " + domaintest.AdminToken}}, 200, &keys)
	if len(keys) != 1 {
		t.Errorf("API keys %+v, want the one created", keys)
	}
}
