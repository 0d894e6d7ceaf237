package web_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/domains"
	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
	"petstore/events"
	"petstore/handlers"
	"petstore/metrics"
	"petstore/store/boltstore"
)

// The browser tests drive the real server: handlers.New with the embedded
// spec's file, a fresh store, and (for the domains page) the custom-domain
// manager asking a real DNS server.

// readSpec returns ../openapi.yaml, the file main embeds.
func readSpec(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// prepared is handlers.Prepare of openapi.yaml, made once for every
// server of the tests: parsing the documents and rendering the site is
// most of what handlers.New costs.
var prepared struct {
	once sync.Once
	p    *handlers.Prepared
	err  error
}

func sharedPrepared(t *testing.T) *handlers.Prepared {
	t.Helper()
	spec := readSpec(t)
	prepared.once.Do(func() { prepared.p, prepared.err = handlers.Prepare(spec) })
	if prepared.err != nil {
		t.Fatal(prepared.err)
	}
	return prepared.p
}

type testServer struct {
	url string
	db  *boltstore.DB
	dns *domaintest.DNS // nil unless asked for
	// ahead moves the domain manager's clock forward (nanoseconds), for
	// what happens only after a while.
	ahead atomic.Int64
	// keysSent are the Idempotency-Keys of the POSTs to loseFirstAnswer.
	mu       sync.Mutex
	keysSent []string
}

func (ts *testServer) now() time.Time { return time.Now().Add(time.Duration(ts.ahead.Load())) }

type serverOptions struct {
	// dns starts a challtestsrv and points the domain checker at it.
	dns bool
	// acme also starts pebble, a real ACME CA, and the TLS and HTTP
	// listeners where it validates challenges: verified domains get
	// certificates. It implies dns.
	acme bool
	// corsOrigins are the origins allowed to call the API from scripts.
	corsOrigins []string
	// webhooks runs a webhook engine that delivers to private addresses
	// (the test's own receivers).
	webhooks bool
	// acmeDNSZone is --acme-dns-zone: domains get the records of a move
	// without downtime. It implies dns.
	acmeDNSZone string
	// loseFirstAnswer is a path whose first POST the server carries out,
	// then closes the connection without answering: the answer is lost on
	// the way, as when the network drops.
	loseFirstAnswer string
}

func newServer(t *testing.T, opt serverOptions) *testServer {
	t.Helper()
	db := domaintest.OpenStore(t)
	if _, err := db.EnsureAdminToken(context.Background(), domaintest.AdminToken); err != nil {
		t.Fatal(err)
	}
	ts := &testServer{db: db}
	cfg := handlers.Config{Store: db, File: db, Prepared: sharedPrepared(t), CORSOrigins: opt.corsOrigins, Metrics: metrics.New()}
	var (
		manager *domains.Manager
		pebble  *domaintest.Pebble
	)
	if opt.dns || opt.acme || opt.acmeDNSZone != "" {
		ts.dns = domaintest.StartDNS(t)
		dc := domains.Config{
			Store:    db,
			Now:      ts.now,
			Platform: dnscheck.Platform{Domain: domaintest.PlatformDomain, CNAMETarget: domaintest.CNAMETarget},
			Checker: &dnscheck.Checker{
				Resolvers: []string{ts.dns.Addr()}, Timeout: time.Second,
				AllowPrivateNameservers: true,
			},
			AllowTestTLDs: true,
			ACMEDNSZone:   opt.acmeDNSZone,
		}
		if opt.acme {
			pebble = domaintest.StartPebble(t, ts.dns, domaintest.PebbleOptions{})
			// Pebble validates on 127.0.0.1: test names resolve there
			// through the CNAME target.
			ts.dns.AddA(t, domaintest.CNAMETarget, "127.0.0.1")
			dc.ACME = &domains.ACME{
				CA: pebble.DirectoryURL(), TrustedRoots: pebble.RootsPool(), Profile: "default",
				HTTPPort: pebble.HTTPPort, TLSPort: pebble.TLSPort,
			}
		}
		manager = domaintest.NewManager(t, dc)
	} else {
		// Development: no platform domain, no certificates, the system's
		// resolvers, as the service runs with no flags.
		manager = domaintest.NewManager(t, domains.Config{Store: db, Checker: &dnscheck.Checker{}})
	}
	cfg.Domains = manager
	if opt.webhooks {
		policy := events.Policy{AllowPrivate: true}
		e := events.New(events.Config{Store: db, Policy: policy, Poll: 20 * time.Millisecond, Retention: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { e.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		cfg.Events, cfg.WebhookPolicy = e, policy
	}
	srv, err := handlers.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if pebble != nil {
		serveOn(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(pebble.TLSPort)), srv, manager.TLSConfig())
		serveOn(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(pebble.HTTPPort)), manager.HTTPChallengeHandler(srv.HTTPSRedirect()), nil)
	}
	// Custom domains need a successful deploy, which main records at start.
	if err := srv.RecordDeploy(context.Background()); err != nil {
		t.Fatal(err)
	}
	var h http.Handler = srv
	if opt.loseFirstAnswer != "" {
		h = ts.losingFirstAnswer(opt.loseFirstAnswer, srv)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	ts.url = hs.URL
	return ts
}

// losingFirstAnswer serves the first POST to path with next, then closes
// the connection instead of answering; it notes every such POST's
// Idempotency-Key in ts.keysSent.
func (ts *testServer) losingFirstAnswer(path string, next http.Handler) http.Handler {
	var lost atomic.Bool
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != path {
			next.ServeHTTP(w, r)
			return
		}
		ts.mu.Lock()
		ts.keysSent = append(ts.keysSent, r.Header.Get("Idempotency-Key"))
		ts.mu.Unlock()
		if lost.Swap(true) {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(httptest.NewRecorder(), r)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		conn.Close()
	})
}

// serveOn serves h on addr (over TLS with tlsConfig) until the test ends.
func serveOn(t *testing.T, addr string, h http.Handler, tlsConfig *tls.Config) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	// Handshakes the CA or a test refuses on purpose are not news.
	s := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
}

// call sends a request from Go, outside the browser, to set up or check
// what the page did.
func (ts *testServer) call(t *testing.T, method, path, body string, header map[string]string) (int, http.Header, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = bytes.NewBufferString(body)
	}
	req, err := http.NewRequest(method, ts.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v // Go sends req.Host, never a Host in the header map
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// planPro moves the project to the Pro plan, which custom domains need.
func (ts *testServer) planPro(t *testing.T) {
	t.Helper()
	if status := ts.admin(t, http.MethodPatch, "/admin/project", `{"plan":"pro"}`, nil); status != http.StatusOK {
		t.Fatalf("plan: %d", status)
	}
}

// admin calls the admin API and decodes a 2xx answer into out.
func (ts *testServer) admin(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	status, _, b := ts.call(t, method, path, body, map[string]string{"Authorization": "Bearer " + domaintest.AdminToken})
	if out != nil && status < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: decoding %s: %v", method, path, b, err)
		}
	}
	return status
}

// apiKey creates an API key through the admin API.
func (ts *testServer) apiKey(t *testing.T, name string) string {
	t.Helper()
	var k struct{ Secret string }
	if status := ts.admin(t, http.MethodPost, "/admin/api-keys", `{"name":"`+name+`"}`, &k); status != http.StatusCreated {
		t.Fatalf("creating an API key: status %d", status)
	}
	return k.Secret
}
