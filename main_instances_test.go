package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/events/webhooktest"
	"petstore/store/postgres/pgtest"
)

// TestTwoInstancesShareOneDatabase runs two instances of the service
// through run() on one PostgreSQL database, as behind a load balancer:
// stock taken through both never oversells, a key revoked on one is
// refused by the other within a second, a domain verified through one
// gets one certificate from the CA and is served by both, a redirect
// saved on one is followed by the other within a second, removing it on
// one fails the other's next handshake within a second, and a due
// background check runs on exactly one of them.
func TestTwoInstancesShareOneDatabase(t *testing.T) {
	databaseURL := pgtest.URL(t) // first: without PostgreSQL the test is skipped
	challtestsrv, pebble, rootFile := startACME(t)
	var clockMu sync.Mutex
	now := time.Now().UTC()
	domainsNow = func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	domainsTickEvery = 50 * time.Millisecond
	t.Cleanup(func() { domainsNow, domainsTickEvery = time.Now, 0 })
	advance := func(d time.Duration) { clockMu.Lock(); defer clockMu.Unlock(); now = now.Add(d) }

	const name = "api.shared.test"
	// Pebble validates through challtestsrv; the services' checker asks a
	// resolver the test can make fail.
	resolver := domaintest.StartFaultyDNS(t)
	common := append([]string{
		// One client sends 200 orders at once: no per-client caps.
		"--database", databaseURL, "--max-client-conns", "0", "--max-client-in-flight", "0", "--dns-allow-private",
	}, customDomainFlags(pebble, rootFile)...)
	env := map[string]string{"PETSTORE_DNS_RESOLVER": resolver.Addr()}
	// Pebble validates TLS-ALPN-01 on one port: a's. b serves beside it.
	tlsA := net.JoinHostPort("127.0.0.1", strconv.Itoa(pebble.TLSPort))
	tlsB := freeLoopbackAddr(t)
	a := start(t, env, slices.Concat(common, []string{"--https-listen", tlsA})...)
	b := start(t, env, slices.Concat(common, []string{"--https-listen", tlsB})...)

	t.Run("orders through both never oversell", func(t *testing.T) {
		key := createKey(t, a, "orders")
		for _, c := range [][3]string{
			{"POST", "/categories", `{"name":"dogs"}`},
			{"POST", "/pets", `{"name":"Rex","categoryId":1}`},
			{"PUT", "/store/inventory/1", `{"quantity":50}`},
		} {
			if code, body := a.call(t, c[0], c[1], c[2], "X-API-Key", key); code != 200 && code != 201 {
				t.Fatalf("%s %s: %d %s", c[0], c[1], code, body)
			}
		}
		// b learns of the key created on a within a poll; setting the
		// stock again is a write that needs it. The polls that fail count
		// as failed credentials of their address: another one than the
		// other calls'.
		waitFor(t, "b accepts a's key", 10*time.Second, func() bool {
			code, _ := callFrom(t, "127.0.0.2", b, "PUT", "/store/inventory/1", `{"quantity":50}`, "X-API-Key", key)
			return code == 200
		})
		var mu sync.Mutex
		codes := map[int]int{}
		var wg sync.WaitGroup
		for i := range 200 {
			in := a
			if i%2 == 1 {
				in = b
			}
			wg.Go(func() {
				code, body, err := in.do(http.DefaultClient, "POST", "/store/orders", `{"petId":1,"quantity":1}`, "X-API-Key", key)
				if err != nil {
					t.Errorf("order: %v", err)
					return
				}
				if code != 201 && !(code == 409 && strings.Contains(body, "insufficient_stock")) {
					t.Errorf("order: %d %s", code, body)
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if codes[201] != 50 || codes[409] != 150 {
			t.Errorf("200 orders against stock 50: %v, want 50 placed and 150 refused", codes)
		}
		for _, in := range []*instance{a, b} {
			if _, body := in.call(t, "GET", "/store/inventory/1", "", "X-API-Key", key); !strings.Contains(body, `"quantity":0`) {
				t.Errorf("inventory after the orders: %s", body)
			}
		}
	})

	t.Run("a key revoked on one is refused by the other within 1 s", func(t *testing.T) {
		code, body := a.call(t, "POST", "/admin/api-keys", `{"name":"revoked"}`, adminAuth...)
		var key struct {
			ID     int64  `json:"id"`
			Secret string `json:"secret"`
		}
		if err := json.Unmarshal([]byte(body), &key); code != 201 || err != nil {
			t.Fatalf("creating a key: %d %s", code, body)
		}
		post := func() int {
			code, _ := callFrom(t, "127.0.0.3", b, "POST", "/categories", `{"name":"cats"}`, "X-API-Key", key.Secret)
			return code
		}
		waitFor(t, "b accepts the new key", 10*time.Second, func() bool { return post() == 201 })
		if code, body := a.call(t, "DELETE", fmt.Sprintf("/admin/api-keys/%d", key.ID), "", adminAuth...); code != 204 {
			t.Fatalf("revoking: %d %s", code, body)
		}
		waitFor(t, "b refuses the revoked key", 10*time.Second, func() bool { return post() == 401 })
	})

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pebble.IssuerRootPEM(t))
	handshake := func(addr string) (string, error) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr,
			&tls.Config{ServerName: name, RootCAs: roots})
		if err != nil {
			return "", err
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
	}

	t.Run("a domain verified through one is ordered once per attempt and served by both", func(t *testing.T) {
		if code, body := a.call(t, "PATCH", "/admin/project", `{"plan":"pro"}`, adminAuth...); code != 200 {
			t.Fatalf("PATCH project: %d %s", code, body)
		}
		if code, body := a.call(t, "POST", "/admin/domains", `{"name":"`+name+`"}`, adminAuth...); code != 201 {
			t.Fatalf("add: %d %s", code, body)
		}
		// The service's resolver sees the record; the CA's DNS sends the
		// CA to another address, where validation hangs for a second, then
		// fails: a first attempt that fails, and lasts 20 of b's ticks.
		holdValidations(t, net.JoinHostPort("127.0.0.2", strconv.Itoa(pebble.TLSPort)), time.Second)
		challtestsrv.AddA(t, name, "127.0.0.2")
		resolver.SetCNAME(t, name, "cname.petstore.test")
		if code, body := a.call(t, "POST", "/admin/domains/"+name+"/verify", "", adminAuth...); code != 200 || !strings.Contains(body, `"state":"verified"`) {
			t.Fatalf("verify: %d %s", code, body)
		}
		// Both instances' certificate loops tick every 50 ms meanwhile, so b
		// sees the verified domain without a certificate many times over,
		// during the attempt and after its failure: the back-off the
		// failure recorded holds for both.
		certState := func(want string) func() bool {
			return func() bool {
				_, body := b.call(t, "GET", "/admin/domains/"+name, "", adminAuth...)
				return strings.Contains(body, `"certificate":{"state":"`+want+`"`)
			}
		}
		waitFor(t, "the failed attempt", 30*time.Second, certState("failed"))
		// The failure set the next attempt a minute ahead on the stopped
		// clock. An instance that waited on the certificate's storage
		// lock meanwhile would order again once it got the lock, which
		// its wait polls for at least once a second: for longer than that,
		// the CA must see no new order.
		for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if n := strings.Count(pebble.Log(), "Added order"); n != 1 {
				t.Fatalf("%d orders while the failed attempt's back-off runs, want 1:\n%s", n, pebble.Log())
			}
		}
		challtestsrv.Clear(t, domaintest.A, name)
		challtestsrv.SetCNAME(t, name, "cname.petstore.test")
		advance(2 * time.Minute) // past the first back-off, a minute
		waitFor(t, "the certificate", 30*time.Second, certState("issued"))
		// The state is the store's, which the instance that obtained the
		// certificate writes once its cache holds it; the other one loads
		// it when the store's change notice reaches it. Either may be the
		// one that obtained it.
		var serialA, serialB string
		var err error
		waitFor(t, "a serves the domain", 10*time.Second, func() bool {
			serialA, err = handshake(tlsA)
			return err == nil
		})
		waitFor(t, "b serves the domain", 10*time.Second, func() bool {
			serialB, err = handshake(tlsB)
			return err == nil
		})
		if serialA != serialB {
			t.Errorf("a serves certificate %s, b %s", serialA, serialB)
		}
		// The only name either instance ever orders is this one (the
		// default address gets no handshake in this test): one order for
		// the failed attempt, one for the one that succeeded.
		log := pebble.Log()
		if orders, issued := strings.Count(log, "Added order"), strings.Count(log, "Issued certificate"); orders != 2 || issued != 1 {
			t.Errorf("pebble saw %d orders and issued %d certificates, want 2 and 1:\n%s", orders, issued, log)
		}
	})

	t.Run("a redirect saved on one is followed by the other within 1 s", func(t *testing.T) {
		redirectOnB := func() int {
			req, _ := http.NewRequest("GET", b.base+"/pets", nil)
			req.Host = name
			res, err := noFollow.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			return res.StatusCode
		}
		if code := redirectOnB(); code == 308 {
			t.Fatal("b redirects before any redirect was saved")
		}
		settings := `{"domains":{"redirects":[{"from":"` + name + `","to":"petstore.petstore.test","status":308}]}}`
		if code, body := a.call(t, "PUT", "/admin/settings", settings, adminAuth...); code != 200 {
			t.Fatalf("saving the redirect: %d %s", code, body)
		}
		waitFor(t, "b redirects", 10*time.Second, func() bool { return redirectOnB() == 308 })
		if code, body := a.call(t, "PUT", "/admin/settings", `{"domains":{}}`, adminAuth...); code != 200 {
			t.Fatalf("clearing the redirect: %d %s", code, body)
		}
		waitFor(t, "b stops redirecting", 10*time.Second, func() bool { return redirectOnB() != 308 })
	})

	t.Run("removing it on one fails the other's next handshake within 1 s", func(t *testing.T) {
		if _, err := handshake(tlsB); err != nil {
			t.Fatalf("b does not serve the domain before its removal: %v", err)
		}
		if code, body := a.call(t, "DELETE", "/admin/domains/"+name, "", adminAuth...); code != 204 {
			t.Fatalf("remove: %d %s", code, body)
		}
		if _, err := handshake(tlsA); err == nil {
			t.Error("a still serves the removed domain")
		}
		waitFor(t, "b's handshake fails", 10*time.Second, func() bool {
			_, err := handshake(tlsB)
			return err != nil
		})
	})

	t.Run("a background check runs on exactly one instance", func(t *testing.T) {
		const pending = "late.shared.test"
		if code, body := a.call(t, "POST", "/admin/domains", `{"name":"`+pending+`"}`, adminAuth...); code != 201 {
			t.Fatalf("add: %d %s", code, body)
		}
		// Lookups that get no answer: the check lasts the checker's
		// timeout, many times the instances' 50 ms tick, so without the
		// lock the other instance would start the same check meanwhile.
		resolver.SetFault(domaintest.Drop, 1)
		defer resolver.SetFault(domaintest.NoFault, 0)
		started := func() int {
			line := `msg="checking a domain's DNS in the background" domain=` + pending
			return strings.Count(a.out.String(), line) + strings.Count(b.out.String(), line)
		}
		if n := started(); n != 0 {
			t.Fatalf("%d background checks before the first was due", n)
		}
		advance(2 * time.Minute) // the first re-check is due a minute after adding
		waitFor(t, "the background check", 30*time.Second, func() bool {
			_, body := a.call(t, "GET", "/admin/domains/"+pending, "", adminAuth...)
			return strings.Contains(body, `"checkAttempts":1`)
		})
		if n := started(); n != 1 {
			t.Errorf("the due check ran %d times, want once:\n--- a:\n%s\n--- b:\n%s", n, a.out, b.out)
		}
	})
}

// createKey creates an API key through the admin API and returns its secret.
func createKey(t *testing.T, in *instance, name string) string {
	t.Helper()
	// An instance on PostgreSQL serves before it has reached its database
	// (Background): until then the admin token cannot be checked, and it
	// answers 503 with Retry-After, having created nothing. On a loaded
	// machine the first statements may take longer than their timeout.
	var code int
	var body string
	waitFor(t, "an API key (the database reached)", time.Minute, func() bool {
		code, body = in.call(t, "POST", "/admin/api-keys", `{"name":"`+name+`"}`, adminAuth...)
		return code != http.StatusServiceUnavailable
	})
	var key struct{ Secret string }
	if err := json.Unmarshal([]byte(body), &key); code != 201 || err != nil || key.Secret == "" {
		t.Fatalf("creating an API key: %d %s", code, body)
	}
	return key.Secret
}

// waitFor polls cond until it holds, failing the test after limit. It
// polls at most 8 times a second: a poll may be a failed credential, and
// an address may fail 10 times a minute.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	domaintest.WaitFor(t, limit, time.Second/8, func() error {
		if !cond() {
			return errors.New(what)
		}
		return nil
	})
}

// noFollow is a client that shows redirects instead of following them.
var noFollow = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       5 * time.Second,
}

// callFrom is in.call from another loopback source address, whose failed
// credentials the service counts apart.
func callFrom(t *testing.T, source string, in *instance, method, path, body string, header ...string) (int, string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 5 * time.Second,
	}).DialContext}}
	defer client.CloseIdleConnections()
	code, data, err := in.do(client, method, path, body, header...)
	if err != nil {
		t.Fatal(err)
	}
	return code, data
}

// freeLoopbackAddr is a loopback address with a port nothing listens on.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// holdValidations listens on addr and closes each connection after hold,
// unanswered: a validation there fails, slowly.
func holdValidations(t *testing.T, addr string, hold time.Duration) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	domaintest.ServeConns(t, ln, func(c net.Conn) {
		time.AfterFunc(hold, func() { c.Close() })
	})
}

// Two instances on one database: each event is delivered once, by one of
// them, and the stream on B shows what A wrote within a second. The
// database is on a cluster of the test's own: an event is listed once every
// older transaction of the cluster has ended, and on the suite's shared
// cluster another test's long write (a migrate's import) held it back
// past the deadline.
func TestTwoInstancesShareEvents(t *testing.T) {
	parallel(t)
	databaseURL, err := pgtest.Private(t).NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	common := []string{"--database", databaseURL, "--webhook-allow-private", "--rate-limit", "0", "--admin-token", domaintest.AdminToken}
	a := start(t, nil, common...)
	b := start(t, nil, common...)

	rcv := webhooktest.Start(t, webhooktest.Options{Lenient: true})
	subscribeAll(t, a, rcv)
	key := createKey(t, a, "events")

	// B's stream, open before A writes.
	req, _ := http.NewRequest("GET", b.base+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("B's stream: %v %v", res, err)
	}
	defer res.Body.Close()
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if code, body := a.call(t, "POST", "/categories", `{"name":"dogs"}`, "X-API-Key", key); code != 201 {
		t.Fatalf("POST /categories on A: %d %s", code, body)
	}
	began := time.Now()
	deadline := time.After(10 * time.Second)
wait:
	for {
		select {
		case l := <-lines:
			if l == "event: category.created" {
				t.Logf("B's stream showed A's event %s after the write", time.Since(began))
				break wait
			}
		case <-deadline:
			t.Fatal("B's stream did not show A's category.created within 10 s")
		}
	}

	// Writes through both: every event delivered, each once.
	const n = 40
	for i := range n {
		in := a
		if i%2 == 1 {
			in = b
		}
		if code, body := in.call(t, "POST", "/pets", fmt.Sprintf(`{"name":"p%d","categoryId":1}`, i), "X-API-Key", key); code != 201 {
			t.Fatalf("POST /pets: %d %s", code, body)
		}
	}
	created := map[int64]bool{} // pet.created's ids received
	domaintest.WaitFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		for _, d := range rcv.Deliveries() {
			var p struct{ ID int64 }
			if d.Event.Type == "pet.created" && json.Unmarshal(d.Event.Data, &p) == nil {
				created[p.ID] = true
			}
		}
		if len(created) != n {
			return fmt.Errorf("%d of %d pet.created received", len(created), n)
		}
		return nil
	})
	// A moment for a duplicate to arrive before counting: the wait can
	// only make the check catch more, never fail a correct run.
	time.Sleep(500 * time.Millisecond)
	ids, dups, petsCreated := map[string]bool{}, 0, 0
	for _, d := range rcv.Deliveries() {
		if ids[d.ID] {
			dups++
			continue
		}
		ids[d.ID] = true
		if d.Event.Type == "pet.created" {
			petsCreated++
		}
	}
	if dups != 0 {
		t.Errorf("%d deliveries were made twice", dups)
	}
	if petsCreated != n {
		t.Errorf("pet.created delivered: %d, want %d", petsCreated, n)
	}
}
