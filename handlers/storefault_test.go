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
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/handlers"
	"petstore/store"
	"petstore/store/boltstore"
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
		if err := ts.db.CreatePet(context.Background(), &store.Pet{Name: "bulk", CategoryID: 1}, nil); err != nil {
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
	return serveStore(t, db, opts...), db
}

// serveStore serves db with the test servers' configuration and admin
// token, and uses a new API key.
func serveStore(t *testing.T, db store.Store, opts ...serverOption) *testServer {
	t.Helper()
	srv, err := handlers.New(serverConfig(t, db, opts...))
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
	t.Parallel()
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
	r.serve(t, ln)
	t.Cleanup(r.cut)
	return r
}

func (r *relay) serve(t *testing.T, ln net.Listener) {
	r.mu.Lock()
	r.ln = ln
	r.mu.Unlock()
	domaintest.ServeConns(t, ln, func(c net.Conn) {
		up, err := net.Dial("tcp", r.target)
		if err != nil {
			c.Close()
			return
		}
		r.mu.Lock()
		r.conns[c], r.conns[up] = true, true
		r.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); up.Close() }()
		go func() { _, _ = io.Copy(c, up); c.Close() }()
	})
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
	r.serve(t, ln)
}

// TestAdminDuringAStartupOutage: while the database has not been reached
// since start, the admin token cannot be checked: the admin API and the
// other operator paths answer 503 database_unavailable with Retry-After,
// as the public API does, naming the database, whatever token is given,
// and none of those answers counts as a failed credential. Once the
// database is reached, the token works and a wrong one is a plain 401.
func TestAdminDuringAStartupOutage(t *testing.T) {
	t.Parallel()
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

// writeClient sends API writes from goroutines other than the test's, so it
// reports failures as errors instead of failing the test itself.
type writeClient struct {
	base, key string
	c         *http.Client
}

func (w *writeClient) send(method, path, body string, out any) (int, error) {
	req, err := http.NewRequest(method, w.base+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-API-Key", w.key)
	req.Header.Set("Content-Type", "application/json")
	return domaintest.DoJSON(w.c, req, out)
}

// ackedPet is a pet whose creation and stock were both answered 2xx.
type ackedPet struct {
	id    int64
	name  string
	stock int
}

const (
	seedStock = 1_000_000 // stock of the pets created before the load
	newStock  = 7         // stock the writers give the pets they create
)

// TestBackupUnderLoad takes a backup over HTTP while writers create pets and
// place orders, restores it to a file, and checks it: a sound bbolt file,
// every write answered before the backup request is in it, and stock and
// orders agree for every pet, as they must in a consistent copy.
func TestBackupUnderLoad(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()

	var cat store.Category
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201).decode(&cat)
	var seeds []int64
	for i := range 8 {
		var p store.Pet
		ts.do("POST", "/pets", fmt.Sprintf(`{"name":"seed-%d","categoryId":%d}`, i, cat.ID)).wantStatus(201).decode(&p)
		ts.do("PUT", fmt.Sprintf("/store/inventory/%d", p.ID), fmt.Sprintf(`{"quantity":%d}`, seedStock)).wantStatus(200)
		seeds = append(seeds, p.ID)
	}

	client := &writeClient{base: ts.http.URL, key: ts.apiKey,
		c: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 20 * time.Second}}
	defer client.c.CloseIdleConnections()
	var (
		mu     sync.Mutex
		pets   []ackedPet    // answered 2xx, in the order of their answers
		orders []store.Order // likewise
		stop   = make(chan struct{})
		wg     sync.WaitGroup
	)
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	for w := range 3 {
		wg.Go(func() {
			for n := 0; !stopped(); n++ {
				name := fmt.Sprintf("w%d-%d", w, n)
				var p store.Pet
				if st, err := client.send("POST", "/pets", fmt.Sprintf(`{"name":%q,"categoryId":%d}`, name, cat.ID), &p); err != nil || st != 201 {
					t.Errorf("creating a pet: %d %v", st, err)
					return
				}
				if st, err := client.send("PUT", fmt.Sprintf("/store/inventory/%d", p.ID), fmt.Sprintf(`{"quantity":%d}`, newStock), nil); err != nil || st != 200 {
					t.Errorf("stocking pet %d: %d %v", p.ID, st, err)
					return
				}
				mu.Lock()
				pets = append(pets, ackedPet{p.ID, name, newStock})
				mu.Unlock()
			}
		})
	}
	for w := range 3 {
		wg.Go(func() {
			for n := 0; !stopped(); n++ {
				petID := seeds[(w+n)%len(seeds)]
				mu.Lock()
				if n%2 == 1 && len(pets) > 0 {
					petID = pets[(n*7+w)%len(pets)].id // a pet of the load, whose stock runs out
				}
				mu.Unlock()
				var o store.Order
				st, err := client.send("POST", "/store/orders", fmt.Sprintf(`{"petId":%d,"quantity":%d}`, petID, 1+n%3), &o)
				switch {
				case err != nil:
					t.Errorf("placing an order: %v", err)
					return
				case st == 201:
					mu.Lock()
					orders = append(orders, o)
					mu.Unlock()
				case st != 409: // 409: that pet's stock ran out
					t.Errorf("placing an order for pet %d: %d", petID, st)
					return
				}
			}
		})
	}
	counts := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return len(pets), len(orders)
	}
	// The bound only catches writers that stopped (stuck behind the
	// backup): it is generous, because a loaded machine runs them slowly.
	waitFor := func(what string, ok func(p, o int) bool) {
		deadline := time.Now().Add(time.Minute)
		for p, o := counts(); !ok(p, o); p, o = counts() {
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("waiting for %s: %d pets and %d orders acknowledged", what, p, o)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}

	waitFor("the load", func(p, o int) bool { return p >= 30 && o >= 60 })
	// Everything acknowledged so far must be in the backup.
	mu.Lock()
	petsBefore, ordersBefore := slices.Clone(pets), slices.Clone(orders)
	mu.Unlock()
	res := ts.adminDo("GET", "/admin/backup", "").wantStatus(200)
	p0, o0 := counts()
	// The writers keep going after the backup, too.
	waitFor("writes after the backup", func(p, o int) bool { return p >= p0+5 && o >= o0+5 })
	close(stop)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var after store.Pet
	ts.do("POST", "/pets", fmt.Sprintf(`{"name":"after-backup","categoryId":%d}`, cat.ID)).wantStatus(201).decode(&after)
	t.Logf("backup of %d bytes; acknowledged before it: %d pets, %d orders; in all: %d pets, %d orders",
		len(res.body), len(petsBefore), len(ordersBefore), len(pets), len(orders))

	if cl := res.header.Get("Content-Length"); cl != strconv.Itoa(len(res.body)) {
		t.Errorf("Content-Length %q for %d bytes", cl, len(res.body))
	}
	if ct := res.header.Get("Content-Type"); ct != "application/octet-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	if cd := res.header.Get("Content-Disposition"); !regexp.MustCompile(`^attachment; filename="petstore-\d{8}T\d{6}Z\.db"$`).MatchString(cd) {
		t.Errorf("Content-Disposition %q", cd)
	}

	path := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(path, res.body, 0o600); err != nil {
		t.Fatal(err)
	}
	bk, err := boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("opening the backup: %v", err)
	}
	defer bk.Close()
	if err := bk.Check(ctx); err != nil {
		t.Fatalf("the backup is not a sound bbolt file: %v", err)
	}

	for _, p := range petsBefore {
		got, err := bk.Pet(ctx, p.id)
		if err != nil || got.Name != p.name {
			t.Errorf("pet %d (%s), acknowledged before the backup: %+v, %v", p.id, p.name, got, err)
		}
	}
	for _, o := range ordersBefore {
		got, err := bk.Order(ctx, o.ID)
		if err != nil || got.PetID != o.PetID || got.Quantity != o.Quantity {
			t.Errorf("order %d, acknowledged before the backup: %+v, %v; want %+v", o.ID, got, err, o)
		}
	}
	if got, err := bk.Pet(ctx, after.ID); store.ErrorCode(err) != store.ENOTFOUND {
		t.Errorf("a pet created after the backup is in it: %+v, %v", got, err)
	}

	// Stock and orders agree, pet by pet: the stock each was given is what
	// it has plus what its orders took.
	given := map[int64]int{}
	for _, id := range seeds {
		given[id] = seedStock
	}
	stockedBefore := map[int64]bool{}
	for _, p := range petsBefore {
		stockedBefore[p.id] = true
	}
	checkStockAndOrders(t, "backup", bk, given, stockedBefore)

	// The live store holds together too, with every write in it.
	live := map[int64]bool{}
	for _, p := range pets {
		live[p.id] = true
	}
	checkStockAndOrders(t, "live store", ts.db, given, live)
	if n := countOrders(t, ts.db); n != len(orders) {
		t.Errorf("the live store has %d orders, %d were acknowledged", n, len(orders))
	}

	// The backup restores: a server started on it serves its data, with the
	// admin token and the API key it had.
	rs := startOn(t, bk)
	rs.apiKey = ts.apiKey
	var got store.Pet
	rs.do("GET", fmt.Sprintf("/pets/%d", petsBefore[0].id), "").wantStatus(200).decode(&got)
	if got.Name != petsBefore[0].name {
		t.Errorf("restored server: pet %+v, want %s", got, petsBefore[0].name)
	}
	rs.do("GET", fmt.Sprintf("/pets/%d", after.ID), "").wantError(404, "not_found")
	rs.adminDo("GET", "/admin/project", "").wantStatus(200)
	rs.do("POST", "/store/orders", fmt.Sprintf(`{"petId":%d}`, seeds[0])).wantStatus(201)
}

// checkStockAndOrders checks, for every pet in db, that its stock plus the
// quantities of its orders is the stock it was given: given[id] for the
// pets in given, newStock for the other pets in stocked, and for the rest
// newStock or 0 (created, but their stock not yet answered).
func checkStockAndOrders(t *testing.T, what string, db *boltstore.DB, given map[int64]int, stocked map[int64]bool) {
	t.Helper()
	ctx := context.Background()
	seen := 0
	for page := (store.Page{Limit: store.MaxPageSize}); ; {
		pets, next, err := db.ListPets(ctx, store.PetFilter{Page: page})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pets {
			seen++
			inv, err := db.InventoryItem(ctx, p.ID)
			if err != nil {
				t.Errorf("%s: pet %d has no inventory entry: %v", what, p.ID, err)
				continue
			}
			total := inv.Quantity + orderedQuantity(t, db, p.ID)
			want, ok := given[p.ID]
			if !ok {
				want = newStock
				if !stocked[p.ID] && total == 0 {
					continue // created, its stock not set yet
				}
			}
			if total != want {
				t.Errorf("%s: pet %d has %d in stock and %d ordered; it was given %d", what, p.ID, inv.Quantity, total-inv.Quantity, want)
			}
		}
		if next == 0 {
			break
		}
		page.After = next
	}
	if seen < len(given) {
		t.Errorf("%s: %d pets", what, seen)
	}
}

func countOrders(t *testing.T, db *boltstore.DB) int {
	t.Helper()
	n := 0
	for page := (store.Page{Limit: store.MaxPageSize}); ; {
		list, next, err := db.ListOrders(context.Background(), store.OrderFilter{Page: page})
		if err != nil {
			t.Fatal(err)
		}
		n += len(list)
		if next == 0 {
			return n
		}
		page.After = next
	}
}

// startOn starts a server on an open store, as the service does on its data
// file, with the admin token and API key of the test servers.
func startOn(t *testing.T, db *boltstore.DB) *testServer {
	t.Helper()
	specs(t)
	srv, err := handlers.New(serverConfig(t, db, func(c *handlers.Config) {
		c.Now = func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }
	}))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &testServer{tb: t, db: db, srv: srv, http: hs, admin: domaintest.AdminToken}
}

// TestBackupRestoresThroughTheService restores the way the README says: a
// backup of a running service replaces the data file of a stopped one, which
// then starts on it.
func TestBackupRestoresThroughTheService(t *testing.T) {
	ts := newTestServer(t)
	var cat store.Category
	var rex store.Pet
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201).decode(&cat)
	ts.do("POST", "/pets", fmt.Sprintf(`{"name":"Rex","categoryId":%d}`, cat.ID)).wantStatus(201).decode(&rex)

	head := ts.adminDo("HEAD", "/admin/backup", "").wantStatus(200)
	body := ts.adminDo("GET", "/admin/backup", "").wantStatus(200).body
	if len(head.body) != 0 || head.header.Get("Content-Length") != strconv.Itoa(len(body)) {
		t.Errorf("HEAD: Content-Length %q and %d bytes of body; GET sent %d bytes", head.header.Get("Content-Length"), len(head.body), len(body))
	}

	// A second service with its own data file, then stopped: the file the
	// backup replaces.
	path := filepath.Join(t.TempDir(), "petstore.db")
	domaintest.WriteStoreFile(t, path, func(other *boltstore.DB) error {
		return other.CreateCategory(context.Background(), &store.Category{Name: "old data"}, nil)
	})
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	restored, err := boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	rs := startOn(t, restored)
	var got store.Pet
	rs.do("GET", fmt.Sprintf("/pets/%d", rex.ID), "").wantStatus(200).decode(&got)
	if got != rex {
		t.Errorf("restored pet %+v, want %+v", got, rex)
	}
	var cats []store.Category
	rs.do("GET", "/categories", "").wantStatus(200).decode(&cats)
	if len(cats) != 1 || cats[0].Name != "dogs" {
		t.Errorf("restored categories %+v, want only dogs", cats)
	}
}

func TestBackupNeedsTheAdminToken(t *testing.T) {
	ts := newTestServer(t)
	for _, h := range []http.Header{{}, {"Authorization": {"Bearer nope"}}, {"X-Api-Key": {ts.apiKey}}} {
		ts.send("GET", "/admin/backup", "", h).wantError(401, "unauthorized")
	}
}

// TestBackupOfAClosedStore: a failure before the first byte is an Error
// answer, not a broken download.
func TestBackupOfAClosedStore(t *testing.T) {
	ts := newTestServer(t)
	if err := ts.db.Close(); err != nil {
		t.Fatal(err)
	}
	ts.adminDo("GET", "/admin/backup", "").wantError(500, "internal")
}
