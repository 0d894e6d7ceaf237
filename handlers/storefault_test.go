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
func startOnPostgres(t *testing.T, databaseURL string, opts ...serverOption) *testServer {
	t.Helper()
	ts, _ := startOnPostgresDB(t, databaseURL, opts...)
	return ts
}

// startOnPostgresDB is startOnPostgres, also giving the store.
func startOnPostgresDB(t *testing.T, databaseURL string, opts ...serverOption) (*testServer, *postgres.DB) {
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
	srv, err := handlers.New(serverConfig(t, db, opts...))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	ts := &testServer{tb: t, srv: srv, http: hs, admin: domaintest.AdminToken}
	ts.useNewAPIKey()
	return ts, db
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

// TestAdminDuringAStartupOutage: while the database has not been reached
// since start, the admin token cannot be checked: the admin API and the
// other operator paths answer 503 database_unavailable with Retry-After,
// as the public API does, naming the database, whatever token is given,
// and none of those answers counts as a failed credential. Once the
// database is reached, the token works and a wrong one is a plain 401.
func TestAdminDuringAStartupOutage(t *testing.T) {
	ctx := context.Background()
	cluster := pgtest.Private(t)
	dbURL, err := cluster.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Halt(); err != nil {
		t.Fatal(err)
	}
	db, err := postgres.Connect(ctx, dbURL, store.Options{}, postgres.Config{Background: true, Timeouts: postgres.Timeouts{Connect: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv, err := handlers.New(serverConfig(t, db))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	ts := &testServer{tb: t, srv: srv, http: hs, admin: domaintest.AdminToken}

	wrong := http.Header{"Authorization": {"Bearer pat_wrong"}}
	for i := range handlers.DefaultCredentialFailures + 2 {
		for _, r := range []*response{
			ts.adminDo(http.MethodGet, "/admin/project", ""),
			ts.send(http.MethodGet, "/admin/project", "", wrong.Clone()),
			ts.adminDo(http.MethodGet, "/admin/api-keys", ""),
			ts.adminDo(http.MethodGet, "/admin/openapi.yaml", ""), // an operator path outside the admin operations
		} {
			r.wantError(http.StatusServiceUnavailable, store.EUNAVAILABLE)
			if r.header.Get("Retry-After") == "" {
				t.Fatalf("attempt %d: a 503 without Retry-After: %s", i, r.body)
			}
			if msg := r.message(); !strings.Contains(msg, "PostgreSQL database") || !strings.Contains(msg, "admin token") {
				t.Fatalf("attempt %d: the message does not say the database keeps the admin token from being checked: %q", i, msg)
			}
		}
	}
	ts.send(http.MethodGet, "/admin/project", "", http.Header{}).wantError(http.StatusUnauthorized, "unauthorized")

	if err := cluster.Resume(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := db.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	// What the service's start-up writes once the database is reached.
	if _, err := db.EnsureAdminToken(ctx, domaintest.AdminToken); err != nil {
		t.Fatal(err)
	}
	ts.adminDo(http.MethodGet, "/admin/project", "").wantStatus(http.StatusOK)
	ts.send(http.MethodGet, "/admin/project", "", wrong.Clone()).wantError(http.StatusUnauthorized, "unauthorized")
}

// TestFloodOfRandomKeysOnPostgres: on PostgreSQL every API key is looked
// up in the database, and random keys are never in the short cache of
// unknown ones. A flood of them from one address is locked out (429 with
// Retry-After) after the failed-credential limit, and from then on costs
// at most one query a second, not one per request; the right key from
// that address gets through at the next second, and other addresses are
// not held up.
func TestFloodOfRandomKeysOnPostgres(t *testing.T) {
	ts, db := startOnPostgresDB(t, pgtest.URL(t))
	res := ts.adminDo(http.MethodPost, "/admin/api-keys", `{"name":"owner"}`)
	res.wantStatus(http.StatusCreated)
	var key struct{ Secret string }
	res.decode(&key)

	const flood = 300
	began := time.Now()
	before := db.PoolStats().Acquires
	var limited int
	for i := range flood {
		h := http.Header{"X-Api-Key": {fmt.Sprintf("psk_random-%d-%d", i, time.Now().UnixNano())}}
		r := ts.send(http.MethodPost, "/categories", `{"name":"x"}`, h)
		switch r.status {
		case http.StatusUnauthorized:
		case http.StatusTooManyRequests:
			limited++
			if r.header.Get("Retry-After") == "" {
				t.Fatal("a 429 without Retry-After")
			}
		default:
			t.Fatalf("a random key: %d %s", r.status, r.body)
		}
	}
	queries := db.PoolStats().Acquires - before
	took := time.Since(began)
	t.Logf("%d random keys from one address in %v: %d limited (429), %d database queries", flood, took.Round(time.Millisecond), limited, queries)
	if limited < flood-handlers.DefaultCredentialFailures-int(took/time.Second)-1 {
		t.Errorf("only %d of %d random keys were limited", limited, flood)
	}
	// The flood's lookups: one per key until the lock-out, then one per
	// second; the queries of the store's own background work (its change
	// watcher polls a few times a second) come on top.
	if bound := int64(handlers.DefaultCredentialFailures) + 10*int64(took/time.Second+1); queries > bound {
		t.Errorf("the flood cost %d queries, more than %d", queries, bound)
	}

	// The owner's right key from the locked-out address gets through
	// within a second or so.
	domaintest.WaitFor(t, 5*time.Second, 100*time.Millisecond, func() error {
		r := ts.send(http.MethodPost, "/categories", `{"name":"y"}`, http.Header{"X-Api-Key": {key.Secret}})
		if r.status != http.StatusCreated {
			return fmt.Errorf("the right key from the locked-out address: %d %s", r.status, r.body)
		}
		return nil
	})
}
