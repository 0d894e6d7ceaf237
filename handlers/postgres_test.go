package handlers_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/handlers"
	"petstore/store"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
)

// startOnPostgres starts the server on a PostgreSQL store at databaseURL,
// with the admin token of the test servers.
func startOnPostgres(t *testing.T, databaseURL string) *testServer {
	t.Helper()
	specs(t)
	db, err := postgres.Open(context.Background(), databaseURL, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.EnsureAdminToken(context.Background(), domaintest.AdminToken); err != nil {
		t.Fatal(err)
	}
	srv, err := handlers.New(serverConfig(t, db))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	ts := &testServer{tb: t, srv: srv, http: hs, admin: domaintest.AdminToken}
	ts.useNewAPIKey()
	return ts
}

// TestBackupOnPostgresPointsToPgDump: a backup of a shared database is
// pg_dump's job; the service answers 501 not_supported and says so.
func TestBackupOnPostgresPointsToPgDump(t *testing.T) {
	ts := startOnPostgres(t, pgtest.URL(t))
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		r := ts.adminDo(method, "/admin/backup", "")
		if method == http.MethodHead {
			r.wantStatus(http.StatusNotImplemented)
			continue
		}
		r.wantError(http.StatusNotImplemented, store.ENOTSUPPORTED)
		if msg := r.message(); !strings.Contains(msg, "pg_dump") {
			t.Errorf("the message does not point to pg_dump: %q", msg)
		}
	}
}

// TestReadyzFollowsTheDatabase: /readyz fails (and data requests answer
// 503 database_unavailable) while the database cannot be reached, and returns to 200 by itself
// when it can again, with no restart: the pool reconnects. The network between the service and
// PostgreSQL is a loopback relay the test cuts and restores; the
// database's own side is shown too, by terminating every connection of
// the service from a side connection.
func TestReadyzFollowsTheDatabase(t *testing.T) {
	dbURL := pgtest.URL(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	relay := startRelay(t, u.Host)
	u.Host = relay.addr
	ts := startOnPostgres(t, u.String())
	readyWithin := func(what string, want int) {
		t.Helper()
		domaintest.WaitFor(t, 10*time.Second, 50*time.Millisecond, func() error {
			if r := ts.send(http.MethodGet, "/readyz", "", http.Header{}); r.status != want {
				return fmt.Errorf("%s: /readyz answers %d %s, want %d", what, r.status, r.body, want)
			}
			return nil
		})
	}
	readyWithin("at start", http.StatusOK)

	relay.cut()
	readyWithin("after the cut", http.StatusServiceUnavailable)
	r := ts.send(http.MethodGet, "/readyz", "", http.Header{})
	r.wantError(http.StatusServiceUnavailable, store.EUNAVAILABLE)
	// What the README says the rest of the API answers meanwhile: a 503
	// the client may retry, not a 500.
	r = ts.do(http.MethodGet, "/pets", "").wantError(http.StatusServiceUnavailable, store.EUNAVAILABLE)
	if r.header.Get("Retry-After") == "" {
		t.Error("a 503 database_unavailable has no Retry-After")
	}
	relay.restore(t)
	readyWithin("after the network came back", http.StatusOK)

	killed, err := pgtest.TerminateOthers(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if killed == 0 {
		t.Fatal("the service held no connection to terminate")
	}
	readyWithin("after its connections were terminated", http.StatusOK)
	ts.do(http.MethodGet, "/pets", "").wantStatus(http.StatusOK)
}

// relay forwards loopback TCP connections to a PostgreSQL server until cut.
type relay struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]bool
}

func startRelay(t *testing.T, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{addr: ln.Addr().String(), target: target, conns: map[net.Conn]bool{}}
	r.serve(ln)
	t.Cleanup(r.cut)
	return r
}

func (r *relay) serve(ln net.Listener) {
	r.mu.Lock()
	r.ln = ln
	r.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", r.target)
			if err != nil {
				c.Close()
				continue
			}
			r.mu.Lock()
			r.conns[c], r.conns[up] = true, true
			r.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

// cut closes the listener and every relayed connection: the database is
// unreachable, connections refused.
func (r *relay) cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln != nil {
		r.ln.Close()
		r.ln = nil
	}
	for c := range r.conns {
		c.Close()
	}
	clear(r.conns)
}

// restore listens again on the same address.
func (r *relay) restore(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	r.serve(ln)
}
