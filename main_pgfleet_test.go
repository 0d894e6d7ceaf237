package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/postgres/pgtest"
)

// The database's failures, as a fleet of instances meets them: each one
// slows the service, none hangs it, and every request it fails gets a 503
// JSON body with Retry-After, never a 500 or a dropped connection.

// pgFlags are the flags of an instance on databaseURL with database
// timeouts shorter than the defaults, so that the tests meet them soon,
// yet long enough for a loaded machine under -race.
func pgFlags(databaseURL string, extra ...string) []string {
	return append([]string{
		"--database", databaseURL, "--admin-token", domaintest.AdminToken, "--max-client-conns", "0",
		"--database-connect-timeout", "1s", "--database-acquire-timeout", "2s",
		"--database-statement-timeout", "1500ms", "--database-transaction-timeout", "3s",
	}, extra...)
}

// wantUnavailable fails the test unless a request got 503
// database_unavailable with Retry-After.
func wantUnavailable(t *testing.T, what string, code int, body string, header http.Header) {
	t.Helper()
	var e struct{ Code string }
	_ = json.Unmarshal([]byte(body), &e)
	if code != 503 || e.Code != "database_unavailable" {
		t.Errorf("%s: %d %s, want 503 database_unavailable", what, code, body)
	}
	if header != nil && header.Get("Retry-After") == "" {
		t.Errorf("%s: a 503 without Retry-After", what)
	}
}

// get sends a request and returns the status, body and header.
func (in *instance) get(t *testing.T, method, path, body string, header ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, in.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{Timeout: 20 * time.Second}
	res, err := client.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return 0, "", nil
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Errorf("%s %s: reading the body: %v", method, path, err)
	}
	return res.StatusCode, string(data), res.Header
}

// TestLockedTableAnswers503: a table held under ACCESS EXCLUSIVE for
// several statement timeouts, with 32 clients reading and writing it
// without pause, fails those requests with 503 JSON and Retry-After, and
// only those: requests for another table get 200 throughout (the locked
// table's requests hold at most their share of the pool), /readyz stays
// 200 throughout (one table's lock is not the instance's unreadiness: a
// balancer would find it on every instance), /healthz too.
func TestLockedTableAnswers503(t *testing.T) {
	parallel(t)
	databaseURL := pgtest.URL(t)
	// A statement timeout longer than the wait for a connection, as the
	// defaults have it: a pool held whole by the locked table's requests
	// would fail the others' waits.
	in := start(t, nil, pgFlags(databaseURL, "--database-acquire-timeout", "1s", "--database-statement-timeout", "2s", "--database-transaction-timeout", "4s")...)
	key := createKey(t, in, "locked")
	if code, body := in.call(t, "POST", "/categories", `{"name":"dogs"}`, "X-API-Key", key); code != 201 {
		t.Fatalf("a category: %d %s", code, body)
	}
	waitFor(t, "ready before the lock", 10*time.Second, func() bool {
		code, _, _ := in.get(t, "GET", "/readyz", "")
		return code == 200
	})

	lock := pgtest.Connect(t, databaseURL)
	if err := lock.Exec(context.Background(), `BEGIN`); err != nil {
		t.Fatal(err)
	}
	if err := lock.Exec(context.Background(), `LOCK TABLE pets IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	locked := true
	defer func() {
		if locked {
			_ = lock.Exec(context.Background(), `ROLLBACK`)
		}
	}()

	// 32 clients on the locked table, each sending again as soon as it is
	// answered, until the lock has lasted several statement timeouts
	// (each client answered rounds times, every answer 503).
	const clients, rounds = 32, 2
	stop := make(chan struct{})
	var petClients sync.WaitGroup
	var answered atomic.Int64
	for i := range clients {
		petClients.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				var code int
				var body string
				var header http.Header
				if i%2 == 0 {
					code, body, header = in.get(t, "POST", "/pets", `{"name":"Rex","categoryId":1}`, "X-API-Key", key)
				} else {
					code, body, header = in.get(t, "GET", "/pets", "")
				}
				wantUnavailable(t, "a request for the locked table", code, body, header)
				if n+1 == rounds {
					answered.Add(1)
				}
			}
		})
	}
	// Meanwhile: another table, readiness and liveness, checked without
	// pause; every answer must be 200.
	var checks sync.WaitGroup
	var readyChecks, otherChecks atomic.Int64
	for _, c := range []struct {
		path  string
		count *atomic.Int64
	}{{"/readyz", &readyChecks}, {"/categories", &otherChecks}, {"/healthz", new(atomic.Int64)}} {
		checks.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if code, body, _ := in.get(t, "GET", c.path, ""); code != 200 {
					t.Errorf("GET %s during the lock: %d %s", c.path, code, body)
				}
				c.count.Add(1)
			}
		})
	}
	began := time.Now()
	waitFor(t, "every client of the locked table answered several times", 2*time.Minute, func() bool {
		return answered.Load() == clients
	})
	close(stop)
	petClients.Wait()
	checks.Wait()
	t.Logf("the lock held %v (statement timeout 2s): %d readiness checks and %d requests for another table, all 200",
		time.Since(began).Round(10*time.Millisecond), readyChecks.Load(), otherChecks.Load())
	if readyChecks.Load() < 10 || otherChecks.Load() < 10 {
		t.Errorf("only %d readiness checks and %d requests for another table during the lock", readyChecks.Load(), otherChecks.Load())
	}
	if !strings.Contains(in.out.String(), "SQLSTATE 57014") {
		t.Errorf("no log line names the statement timeout's SQLSTATE:\n%s", in.out)
	}

	code, metrics := in.call(t, "GET", "/metrics", "", adminAuth...)
	for _, want := range []string{`petstore_db_errors_total{class="57"}`, `petstore_db_connections{state="max"} 16`, "petstore_db_unavailable_total ", "petstore_db_acquire_wait_seconds_total "} {
		if code != 200 || !strings.Contains(metrics, want) {
			t.Errorf("/metrics (%d) has no %s", code, want)
		}
	}

	if err := lock.Exec(context.Background(), `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	locked = false
	if code, body := in.call(t, "POST", "/pets", `{"name":"Rex","categoryId":1}`, "X-API-Key", key); code != 201 {
		t.Errorf("a write after the lock: %d %s", code, body)
	}
}

// blackHole accepts connections and never answers: a database host that
// hangs rather than refuses. accepted says when it took each connection.
func blackHole(t *testing.T) (addr string, accepted func() []time.Time) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	var at []time.Time
	// Registered first, run last: the listener is closed before these.
	t.Cleanup(func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	domaintest.ServeConns(t, ln, func(c net.Conn) {
		mu.Lock()
		held = append(held, c)
		at = append(at, time.Now())
		mu.Unlock()
	})
	return ln.Addr().String(), func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(at)
	}
}

// TestFirstHostNeverAnswers: a multi-host URL whose first host accepts and
// never answers costs the connect timeout only until a connection has
// reached the second host: from then on every new connection, those
// after the database ended all of the service's connections included,
// tries the host that answered last first, and the first host sees no
// other attempt. With the hosts named by IP address and by name (pgx
// reaches a name through its addresses, which are all a connection knows).
func TestFirstHostNeverAnswers(t *testing.T) {
	parallel(t)
	for _, form := range []string{"addresses", "names"} {
		t.Run(form, func(t *testing.T) {
			databaseURL := pgtest.URL(t)
			real, err := url.Parse(databaseURL)
			if err != nil {
				t.Fatal(err)
			}
			hole, accepted := blackHole(t)
			first, second := hole, real.Host
			if form == "names" {
				first, second = "localhost:"+port(t, hole), "localhost:"+real.Port()
			}
			multi := *real
			multi.Host = first + "," + second
			// A connect timeout that a burst of new connections to a busy
			// database meets in time: a connection that times out on the
			// good host moves on to the next one, rightly.
			began := time.Now()
			in := start(t, nil, pgFlags(multi.String(), "--database-connect-timeout", "3s")...)
			waitFor(t, "ready", 30*time.Second, func() bool {
				code, _ := in.call(t, "GET", "/readyz", "")
				return code == 200
			})
			t.Logf("ready %v after start, with a connect timeout of 3s; the first host took %d connections by then",
				time.Since(began).Round(10*time.Millisecond), len(accepted()))
			key := createKey(t, in, "multi")
			before := len(accepted())
			began = time.Now()
			if killed, err := pgtest.TerminateOthers(context.Background(), databaseURL); err != nil || killed == 0 {
				t.Fatalf("ending the service's connections: %d, %v", killed, err)
			}
			// Many connections at once, all of them new.
			var wg sync.WaitGroup
			var unavailable atomic.Int64
			for range 16 {
				wg.Go(func() {
					code, body, _ := in.get(t, "POST", "/categories", `{"name":"cats"}`, "X-API-Key", key)
					if code == 503 {
						unavailable.Add(1)
					} else if code != 201 {
						t.Errorf("a write through the second host: %d %s", code, body)
					}
				})
			}
			wg.Wait()
			t.Logf("16 writes after the service's connections were ended took %v; %d got 503", time.Since(began).Round(10*time.Millisecond), unavailable.Load())
			waitFor(t, "a write after the reconnection", 10*time.Second, func() bool {
				code, _ := in.call(t, "POST", "/categories", `{"name":"dogs"}`, "X-API-Key", key)
				return code == 201
			})
			if n := len(accepted()) - before; n != 0 {
				t.Errorf("%d new connections tried the host that never answers after the other one had answered", n)
			}
		})
	}
}

// port is the port of a host:port.
func port(t *testing.T, hostPort string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(hostPort)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDatabaseStoppedAndRestarted: an instance starts while its database
// is down (/healthz 200, /readyz 503 with the reason, the log says it
// retries), becomes ready when the database comes, answers 503 JSON while
// the database is stopped again, and takes writes within seconds of its
// return.
func TestDatabaseStoppedAndRestarted(t *testing.T) {
	parallel(t)
	cluster := pgtest.Private(t)
	databaseURL, err := cluster.NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Halt(); err != nil {
		t.Fatal(err)
	}
	in := start(t, nil, pgFlags(databaseURL)...)
	if code, body := in.call(t, "GET", "/healthz", ""); code != 200 {
		t.Errorf("/healthz with the database down: %d %s", code, body)
	}
	code, body, header := in.get(t, "GET", "/readyz", "")
	wantUnavailable(t, "/readyz with the database down at start", code, body, header)
	if !strings.Contains(body, "not been reached") {
		t.Errorf("/readyz does not say why: %s", body)
	}
	code, body, header = in.get(t, "GET", "/pets", "")
	wantUnavailable(t, "a read with the database down at start", code, body, header)
	waitFor(t, "the log says it retries", 10*time.Second, func() bool {
		return strings.Contains(in.out.String(), "retrying in")
	})

	if err := cluster.Resume(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ready once the database is up", 20*time.Second, func() bool {
		code, _ := in.call(t, "GET", "/readyz", "")
		return code == 200
	})
	// The admin token given at start was written once the database came.
	var key string
	waitFor(t, "the admin token works", 30*time.Second, func() bool {
		code, body := in.call(t, "POST", "/admin/api-keys", `{"name":"k"}`, adminAuth...)
		var k struct{ Secret string }
		_ = json.Unmarshal([]byte(body), &k)
		key = k.Secret
		return code == 201
	})
	if code, body := in.call(t, "POST", "/categories", `{"name":"dogs"}`, "X-API-Key", key); code != 201 {
		t.Fatalf("a write: %d %s", code, body)
	}

	if err := cluster.Halt(); err != nil {
		t.Fatal(err)
	}
	code, body, header = in.get(t, "POST", "/categories", `{"name":"cats"}`, "X-API-Key", key)
	wantUnavailable(t, "a write with the database stopped", code, body, header)
	waitFor(t, "/readyz 503 with the database stopped", 10*time.Second, func() bool {
		code, body, _ := in.get(t, "GET", "/readyz", "")
		return code == 503 && strings.Contains(body, "database_unavailable")
	})
	if code, body := in.call(t, "GET", "/healthz", ""); code != 200 {
		t.Errorf("/healthz with the database stopped: %d %s", code, body)
	}
	if err := cluster.Resume(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	waitFor(t, "writes succeed after the restart", 20*time.Second, func() bool {
		code, _ := in.call(t, "POST", "/categories", `{"name":"cats"}`, "X-API-Key", key)
		return code == 201
	})
	t.Logf("the first write succeeded %v after the database was back", time.Since(back).Round(10*time.Millisecond))
	if strings.Contains(in.out.String(), "status=500") {
		t.Errorf("a request got 500:\n%s", in.out)
	}
}

// TestKeysAcrossInstances: a key created on A works on B at its first use,
// and a key revoked on A is refused by B right after the 204, 100 times;
// no valid request counts as a failed credential.
func TestKeysAcrossInstances(t *testing.T) {
	parallel(t)
	databaseURL := pgtest.URL(t)
	a := start(t, nil, pgFlags(databaseURL)...)
	b := start(t, nil, pgFlags(databaseURL)...)
	for i := range 100 {
		code, body := a.call(t, "POST", "/admin/api-keys", `{"name":"k"}`, adminAuth...)
		var k struct {
			ID     int64
			Secret string
		}
		if err := json.Unmarshal([]byte(body), &k); code != 201 || err != nil {
			t.Fatalf("creating a key: %d %s", code, body)
		}
		if code, body := b.call(t, "POST", "/categories", `{"name":"c"}`, "X-API-Key", k.Secret); code != 201 {
			t.Fatalf("trial %d: a key new on A, on B: %d %s", i, code, body)
		}
		if code, body := a.call(t, "DELETE", fmt.Sprintf("/admin/api-keys/%d", k.ID), "", adminAuth...); code != 204 {
			t.Fatalf("revoking: %d %s", code, body)
		}
		// From another address each time: ten refusals a minute from one
		// address would lock it out, which is not what this measures.
		src := fmt.Sprintf("127.0.%d.%d", 1+i/200, 2+i%200)
		if code, body := callFrom(t, src, b, "POST", "/categories", `{"name":"c"}`, "X-API-Key", k.Secret); code != 401 {
			t.Fatalf("trial %d: a key revoked on A, on B right after the 204: %d %s", i, code, body)
		}
	}
}

// TestRestoreOfAnOlderDump: a dump restored under a running instance (the
// README's restore steps) takes effect for credentials at once: a key
// created after the dump is refused, a key in the dump works, and a key
// revoked after the restore is refused at once; the instance notices that
// the change counter went back and reloads what it caches. Restored
// under writes, again and again, it is never ended by a deadlock with the
// instance's own queries.
func TestRestoreOfAnOlderDump(t *testing.T) {
	parallel(t)
	databaseURL := pgtest.URL(t)
	in := start(t, nil, pgFlags(databaseURL)...)
	kept := createKeyWithID(t, in, "in the dump")
	dump := t.TempDir() + "/petstore.dump"
	runTool(t, pgtest.Program("pg_dump"), "--format=custom", "--file="+dump, databaseURL)
	later := createKeyWithID(t, in, "after the dump")
	if code, body := in.call(t, "POST", "/categories", `{"name":"c"}`, "X-API-Key", later.Secret); code != 201 {
		t.Fatalf("the later key before the restore: %d %s", code, body)
	}

	// Writes go on during the restores, so that the instance's background
	// work (fanning events out to webhooks) holds locks of several tables
	// while the restore takes them in another order: the instance gives
	// way, and each restore succeeds at its first run.
	stop := make(chan struct{})
	writing := make(chan struct{})
	go func() {
		defer close(writing)
		client := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{
			LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.20")}, Timeout: 5 * time.Second,
		}).DialContext}}
		defer client.CloseIdleConnections()
		for {
			select {
			case <-stop:
				return
			default:
			}
			// Refused or not (the restore holds the tables): only the
			// load matters here.
			_, _, _ = in.do(client, "POST", "/categories", `{"name":"during"}`, "X-API-Key", kept.Secret)
		}
	}()
	const restores = 10
	for i := 1; i <= restores; i++ {
		out, err := exec.Command(pgtest.Program("pg_restore"), "--clean", "--if-exists", "--single-transaction", "--dbname="+databaseURL, dump).CombinedOutput()
		if err != nil {
			close(stop)
			<-writing
			t.Fatalf("pg_restore %d of %d: %v\n%s", i, restores, err, out)
		}
	}
	close(stop)
	<-writing
	if code, body := callFrom(t, "127.0.0.9", in, "POST", "/categories", `{"name":"c"}`, "X-API-Key", later.Secret); code != 401 {
		t.Errorf("a key absent from the restored dump, right after the restore: %d %s", code, body)
	}
	if code, body := in.call(t, "POST", "/categories", `{"name":"c"}`, "X-API-Key", kept.Secret); code != 201 {
		t.Errorf("a key in the restored dump: %d %s", code, body)
	}
	// The watcher sees the counter lower than it was at its next poll (a
	// change made before that poll is found by the changes row's stamp:
	// store/postgres's TestRewindThenChangesBeforeThePoll).
	waitFor(t, "the instance notices the counter went back", 10*time.Second, func() bool {
		return strings.Contains(in.out.String(), "went back in time")
	})
	if code, body := in.call(t, "DELETE", fmt.Sprintf("/admin/api-keys/%d", kept.ID), "", adminAuth...); code != 204 {
		t.Fatalf("revoking after the restore: %d %s", code, body)
	}
	if code, body := callFrom(t, "127.0.0.10", in, "POST", "/categories", `{"name":"c"}`, "X-API-Key", kept.Secret); code != 401 {
		t.Errorf("a key revoked after the restore: %d %s", code, body)
	}
}

type keyWithID struct {
	ID     int64
	Secret string
}

func createKeyWithID(t *testing.T, in *instance, name string) keyWithID {
	t.Helper()
	// As in createKey: until the instance has reached its database, the
	// admin token cannot be checked, and it answers 503.
	var code int
	var body string
	waitFor(t, "an API key (the database reached)", time.Minute, func() bool {
		code, body = in.call(t, "POST", "/admin/api-keys", `{"name":"`+name+`"}`, adminAuth...)
		return code != http.StatusServiceUnavailable
	})
	var k keyWithID
	if err := json.Unmarshal([]byte(body), &k); code != 201 || err != nil {
		t.Fatalf("creating a key: %d %s", code, body)
	}
	return k
}

// runTool runs one of PostgreSQL's programs, failing the test with its
// output when it fails.
func runTool(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// TestBlockedCommits: a primary that waits for a synchronous standby that
// is not there blocks every commit. Writes get 503 JSON after the
// timeouts, reads go on, /readyz names the cause and the log says it once;
// when the setting goes, the instance is ready again by itself.
func TestBlockedCommits(t *testing.T) {
	parallel(t)
	cluster := pgtest.PrivateDurable(t)
	databaseURL, err := cluster.NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	in := start(t, nil, pgFlags(databaseURL)...)
	key := createKey(t, in, "sync")
	side := pgtest.Connect(t, databaseURL)
	setStandbys := func(names string) {
		t.Helper()
		if err := side.Exec(context.Background(), `ALTER SYSTEM SET synchronous_standby_names = '`+names+`'`); err != nil {
			t.Fatal(err)
		}
		if err := side.Exec(context.Background(), `SELECT pg_reload_conf()`); err != nil {
			t.Fatal(err)
		}
	}
	setStandbys("gone_standby")
	// The reload reaches each session in its own time: readiness first.
	waitFor(t, "/readyz names the synchronous standby", 10*time.Second, func() bool {
		code, body, _ := in.get(t, "GET", "/readyz", "")
		return code == 503 && strings.Contains(body, "synchronous standby")
	})
	// Each pooled session takes the reload when it next runs a command, so
	// a write on a session that has not yet may still commit; the next
	// writes cannot.
	var code int
	var body string
	var header http.Header
	attempt := 0
	waitFor(t, "a write refused while commits are blocked", 15*time.Second, func() bool {
		attempt++
		code, body, header = in.get(t, "POST", "/categories", fmt.Sprintf(`{"name":"dogs %d"}`, attempt), "X-API-Key", key)
		return code != 201
	})
	wantUnavailable(t, "a write while commits are blocked", code, body, header)
	if code, body := in.call(t, "GET", "/categories", ""); code != 200 {
		t.Errorf("a read while commits are blocked: %d %s", code, body)
	}
	// The log is written by a goroutine of its own.
	waitFor(t, "the log names the blocked commits", 5*time.Second, func() bool {
		return strings.Contains(in.out.String(), "not ready: commits wait for a synchronous standby")
	})
	if n := strings.Count(in.out.String(), "not ready: commits wait for a synchronous standby"); n != 1 {
		t.Errorf("the log names the blocked commits %d times, want once:\n%s", n, in.out)
	}
	setStandbys("")
	waitFor(t, "ready again", 15*time.Second, func() bool {
		code, _, _ := in.get(t, "GET", "/readyz", "")
		return code == 200
	})
	if code, body := in.call(t, "POST", "/categories", `{"name":"cats"}`, "X-API-Key", key); code != 201 {
		t.Errorf("a write once commits are no longer blocked: %d %s", code, body)
	}
}

// TestFailoverToAPromotedReplica: two instances write through a
// multi-host URL with target_session_attrs=read-write while the primary
// stops and its streaming replica is promoted. No acknowledged write is
// lost; every failed request gets 503 JSON, never a 500 or a dropped
// connection; the instances find the new primary by themselves.
func TestFailoverToAPromotedReplica(t *testing.T) {
	parallel(t)
	primary := pgtest.Private(t)
	databaseURL, err := primary.NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	standby := primary.NewStandby(t)
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = primary.Addr() + "," + standby.Addr()
	q := u.Query()
	q.Set("target_session_attrs", "read-write")
	u.RawQuery = q.Encode()
	a := start(t, nil, pgFlags(u.String())...)
	b := start(t, nil, pgFlags(u.String())...)
	key := createKey(t, a, "failover")

	var (
		mu      sync.Mutex
		acked   []int64
		statusN = map[int]int{}
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		okCount atomic.Int64
	)
	client := &http.Client{Timeout: 30 * time.Second}
	for w := range 4 {
		in := a
		if w%2 == 1 {
			in = b
		}
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, body, err := in.do(client, "POST", "/categories", `{"name":"kept"}`, "X-API-Key", key)
				if err != nil {
					t.Errorf("a write during the failover: %v (a dropped connection)", err)
					return
				}
				var res struct {
					ID   int64
					Code string
				}
				_ = json.Unmarshal([]byte(body), &res)
				mu.Lock()
				statusN[code]++
				if code == 201 {
					acked = append(acked, res.ID)
				}
				mu.Unlock()
				switch {
				case code == 201:
					okCount.Add(1)
				case code == 503 && res.Code == "database_unavailable":
					time.Sleep(20 * time.Millisecond) // as Retry-After asks, shortened
				default:
					t.Errorf("a write during the failover: %d %s", code, body)
				}
			}
		})
	}
	waitFor(t, "writes before the failover", 20*time.Second, func() bool { return okCount.Load() >= 50 })
	t0 := time.Now()
	if err := primary.Halt(); err != nil {
		t.Fatal(err)
	}
	if err := standby.Promote(); err != nil {
		t.Fatal(err)
	}
	promoted := okCount.Load()
	waitFor(t, "writes on the promoted replica", 30*time.Second, func() bool { return okCount.Load() >= promoted+50 })
	t.Logf("writes resumed %v after the halt", time.Since(t0))
	close(stop)
	wg.Wait()

	conn := pgtest.Connect(t, strings.Replace(databaseURL, primary.Addr(), standby.Addr(), 1))
	stored, err := conn.Int64s(context.Background(), `SELECT id FROM categories`)
	if err != nil {
		t.Fatal(err)
	}
	have := map[int64]bool{}
	for _, id := range stored {
		have[id] = true
	}
	lost := 0
	for _, id := range acked {
		if !have[id] {
			lost++
		}
	}
	t.Logf("answers during the failover: %v; %d acknowledged writes, %d stored", statusN, len(acked), len(stored))
	if lost > 0 {
		t.Errorf("%d of %d acknowledged writes are not on the new primary", lost, len(acked))
	}
}

// TestStartUpWaitsWhatItSays: with a database that accepts connections and
// never answers (a real socket), start-up's wait for it is one attempt
// within one deadline, the bound its log line states: from the first
// connection the silent host accepted to that line, no more than the bound
// and a margin for a loaded machine far below a second wait of the same
// length (start-up used to try twice, each attempt the connect timeout,
// while the log named one), and no second connection before it. The
// service then listens, and /readyz says why it is not ready.
func TestStartUpWaitsWhatItSays(t *testing.T) {
	hole, accepted := blackHole(t)
	const connect = 2 * time.Second
	in := start(t, nil, pgFlags("postgres://petstore@"+hole+"/petstore?sslmode=disable", "--database-connect-timeout", connect.String())...)
	line := regexp.MustCompile(`time=(\S+) .*did not answer within (\S+), start-up's one wait`).FindStringSubmatch(in.out.String())
	if line == nil {
		t.Fatalf("the log states no bound for start-up's wait:\n%s", in.out)
	}
	logged, err := time.Parse(time.RFC3339Nano, line[1])
	if err != nil {
		t.Fatal(err)
	}
	bound, err := time.ParseDuration(line[2])
	if err != nil || bound != connect {
		t.Errorf("the stated bound %q, want the connect timeout %v (one host)", line[2], connect)
	}
	var before []time.Time
	for _, at := range accepted() {
		if at.Before(logged) {
			before = append(before, at)
		}
	}
	if len(before) == 0 {
		t.Fatal("the silent host took no connection before the log line")
	}
	waited := logged.Sub(before[0])
	t.Logf("waited %v for the silent host, the log's bound %v; %d connections before the line", waited.Round(time.Millisecond), bound, len(before))
	if waited > bound+connect/2 || len(before) != 1 {
		t.Errorf("waited %v with %d connections for a database that never answers: more than the stated %v, one attempt", waited.Round(time.Millisecond), len(before), bound)
	}
	code, body, header := in.get(t, "GET", "/readyz", "")
	wantUnavailable(t, "/readyz with a silent database", code, body, header)
}

// TestOutageLogsAFewLines: while the database is stopped, the loops that
// poll it (the event engine's fan-out, ten times a second; the store's
// watch of other instances' changes) fail at every round; each says so in
// a line, then in one line when it succeeds again, with the count of the
// failures between ("(N more"), not in a line per failure.
func TestOutageLogsAFewLines(t *testing.T) {
	parallel(t)
	cluster := pgtest.Private(t)
	databaseURL, err := cluster.NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The service reaches the database through a proxy of the test's own
	// that counts the connections tried: each failed round tries one.
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	tried := countingProxy(t, u.Host)
	u.Host = tried.addr
	in := start(t, nil, pgFlags(u.String())...)
	waitFor(t, "ready", 20*time.Second, func() bool {
		code, _ := in.call(t, "GET", "/readyz", "")
		return code == 200
	})
	// Only what is logged from here on is the outage's: a round that failed
	// while the service reached the database at start logs its own lines.
	halted, mark := time.Now(), len(in.out.String())
	if err := cluster.Halt(); err != nil {
		t.Fatal(err)
	}
	// A bounded count of failed rounds.
	before := tried.count()
	waitFor(t, "a hundred attempts to reach the stopped database", time.Minute, func() bool {
		return tried.count()-before >= 100
	})
	if err := cluster.Resume(); err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"fanning events out to webhooks", "reading other instances' changes"} {
		var lines []string
		n := 0
		// The failures counted in the lines: a repeat every store.RepeatEvery
		// ("(N more)") and the last ("succeeds again (N more failures").
		waitFor(t, msg+" succeeds again, counting the outage's failures", 30*time.Second, func() bool {
			lines, n = nil, 0
			for _, l := range strings.Split(in.out.String()[mark:], "\n") {
				if strings.Contains(l, msg) {
					lines = append(lines, l)
				}
			}
			for _, m := range regexp.MustCompile(regexp.QuoteMeta(msg)+`[^\n]*?\((\d+) more`).FindAllStringSubmatch(strings.Join(lines, "\n"), -1) {
				k, _ := strconv.Atoi(m[1])
				n += k
			}
			return n >= 5 && strings.Contains(strings.Join(lines, "\n"), msg+": succeeds again (")
		})
		// The first line, the last, and one a RepeatEvery while it lasted (a
		// loaded machine stretches the outage).
		most := 3 + int(time.Since(halted)/store.RepeatEvery)
		t.Logf("%q: %d lines, %d failures counted in them", msg, len(lines), n)
		if len(lines) > most {
			t.Errorf("%q: %d lines for the outage (at most %d; %d failures counted), want a few with the count:\n%s", msg, len(lines), most, n, strings.Join(lines, "\n"))
		}
	}
}

// proxy forwards connections to a backend, counting them.
type proxy struct {
	addr string
	mu   sync.Mutex
	n    int
}

func (p *proxy) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// countingProxy forwards each connection to backend (closing it at once
// when backend refuses), until the test ends.
func countingProxy(t *testing.T, backend string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: ln.Addr().String()}
	domaintest.ServeConns(t, ln, func(c net.Conn) {
		p.mu.Lock()
		p.n++
		p.mu.Unlock()
		b, err := net.DialTimeout("tcp", backend, 5*time.Second)
		if err != nil {
			c.Close()
			return
		}
		go func() { _, _ = io.Copy(b, c); b.Close() }()
		go func() { _, _ = io.Copy(c, b); c.Close() }()
	})
	return p
}
