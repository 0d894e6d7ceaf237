package handlers_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
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

// A data file cut while the server runs: the first write used to end the
// process from the store's committer goroutine. Now that write and the next
// ones get an Error body, the process stays up (/healthz, and the test
// itself), and /readyz says the store is not ready.
func TestStoreFault_FileCutWhileRunningFailsWritesNotTheProcess(t *testing.T) {
	ts := newTestServer(t)
	ts.do(http.MethodPost, "/categories", `{"name":"dogs"}`).wantStatus(http.StatusCreated)
	ts.do(http.MethodGet, "/readyz", "").wantStatus(http.StatusOK)
	// Two pages: the meta pages alone, every bucket gone.
	if err := os.Truncate(ts.db.Path(), 8<<10); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		ts.do(http.MethodPost, "/pets", `{"name":"Rex","categoryId":1}`).wantError(http.StatusInternalServerError, "internal")
	}
	ts.do(http.MethodGet, "/healthz", "").wantStatus(http.StatusOK)
	ts.do(http.MethodGet, "/readyz", "").wantError(http.StatusServiceUnavailable, "unavailable")
}

// A damaged page in the data file (a bad sector under the pets' leaf): the
// write that meets it gets 500, and from then on /readyz answers 503,
// naming the file and saying to restore a backup, even after writes
// elsewhere in the file commit; the log says so once. A restart (a new
// store and server on the file) is ready again.
func TestStoreFault_DamagedPageKeepsReadyzUnreadyUntilRestart(t *testing.T) {
	var logs domaintest.SyncBuffer
	ts := newTestServer(t, func(c *handlers.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	ts.do(http.MethodPost, "/categories", `{"name":"dogs"}`).wantStatus(http.StatusCreated)
	ts.do(http.MethodPost, "/pets", `{"name":"damaged-target","categoryId":1}`).wantStatus(http.StatusCreated)
	for range 300 { // so that later pets go to other leaves
		if err := ts.db.CreatePet(context.Background(), &store.Pet{Name: "bulk", CategoryID: 1}); err != nil {
			t.Fatal(err)
		}
	}
	ts.do(http.MethodGet, "/readyz", "").wantStatus(http.StatusOK)
	domaintest.DamagePages(t, ts.db.Path(), []byte("damaged-target"))

	ts.do(http.MethodPut, "/pets/1", `{"name":"renamed","categoryId":1}`).wantError(http.StatusInternalServerError, "internal")
	for range 3 {
		ts.do(http.MethodPost, "/pets", `{"name":"elsewhere","categoryId":1}`).wantStatus(http.StatusCreated)
		res := ts.do(http.MethodGet, "/readyz", "").wantError(http.StatusServiceUnavailable, "unavailable")
		for _, want := range []string{ts.db.Path(), "restore it from a backup"} {
			if !strings.Contains(res.message(), want) {
				t.Errorf("/readyz: %q does not say %q", res.message(), want)
			}
		}
	}
	ts.do(http.MethodGet, "/healthz", "").wantStatus(http.StatusOK)
	if m := ts.adminDo(http.MethodGet, "/metrics", "").wantStatus(http.StatusOK); !strings.Contains(string(m.body), "\npetstore_store_damaged 1\n") {
		t.Errorf("/metrics does not say petstore_store_damaged 1:\n%s", m.body)
	}
	if n := strings.Count(logs.String(), "the data store is damaged"); n != 1 {
		t.Errorf("the damage was logged %d times, want once:\n%s", n, logs.String())
	}

	// The restart: the same file, a new store and server.
	if err := ts.db.Close(); err != nil {
		t.Fatal(err)
	}
	db := domaintest.OpenStoreFile(t, ts.db.Path(), store.Options{})
	srv, err := handlers.New(serverConfig(t, db))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("/readyz after the restart: %d %s", rec.Code, rec.Body)
	}
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Host = "localhost"
	req.Header.Set("Authorization", "Bearer "+ts.admin)
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if !strings.Contains(rec.Body.String(), "\npetstore_store_damaged 0\n") {
		t.Errorf("/metrics after the restart: %d, no petstore_store_damaged 0", rec.Code)
	}
}

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
