package handlers_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/handlers"
	"petstore/handlers/listen"
)

// adminRequests walks the admin OpenAPI document: one request per
// operation, with sample path parameters, so that a route added to the
// document cannot escape these tests.
func adminRequests(t *testing.T) [][2]string {
	_, admin := specs(t)
	var out [][2]string
	for path, item := range admin.doc.Paths.Map() {
		for method := range item.Operations() {
			p := strings.NewReplacer("{id}", "1", "{name}", "shop.example.com").Replace(path)
			out = append(out, [2]string{method, p})
		}
	}
	if len(out) < 10 {
		t.Fatalf("the admin document has only %d operations", len(out))
	}
	return append(out, [2]string{"GET", "/admin/openapi.yaml"}, [2]string{"GET", "/admin/openapi.json"})
}

func TestEveryAdminRouteNeedsTheToken(t *testing.T) {
	ts := newTestServer(t, withoutCredentialLimit)
	for _, r := range adminRequests(t) {
		for _, h := range []http.Header{{}, {"Authorization": {"Bearer nope"}}, {"X-Api-Key": {ts.apiKey}}} {
			body := ""
			if r[0] == "POST" || r[0] == "PUT" || r[0] == "PATCH" {
				body = `{}`
			}
			ts.with(t).send(r[0], r[1], body, h).wantError(401, "unauthorized")
		}
	}
}

func TestOperatorRoutesUnreachableThroughCustomerDomains(t *testing.T) {
	ts := newTestServer(t)
	ts.verifiedDomain("shop.example.com")
	customer := http.Header{"Host": {"shop.example.com"}, "Authorization": {"Bearer " + ts.admin}}
	ts.send("GET", "/pets", "", customer.Clone()).wantStatus(200) // the API is served there
	for _, r := range append(adminRequests(t), [2]string{"GET", "/dashboard/"}) {
		ts.beforeOperations().with(t).send(r[0], r[1], "", customer.Clone()).wantError(404, "not_found")
	}
}

// TestNoSecretInLogs drives authenticated and refused requests and a
// failing one, and finds neither the API key nor the admin token in any
// log line.
func TestNoSecretInLogs(t *testing.T) {
	var logs domaintest.SyncBuffer
	ts := newTestServer(t, func(c *handlers.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.AccessLog, c.AccessLogJSON = &logs, true
	})
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201)
	ts.send("POST", "/categories", `{"name":"x"}`, http.Header{"X-Api-Key": {ts.apiKey + "x"}}).wantError(401, "unauthorized")
	ts.send("GET", "/admin/project", "", http.Header{"Authorization": {"Bearer " + ts.admin + "x"}}).wantError(401, "unauthorized")
	ts.adminDo("GET", "/admin/project", "").wantStatus(200)
	ts.send("GET", "/pets?cursor="+ts.apiKey, "", http.Header{}).wantError(400, "invalid_request")
	var created struct{ Secret string }
	ts.adminDo("POST", "/admin/api-keys", `{"name":"second"}`).wantStatus(201).decode(&created)
	out := logs.String()
	if !strings.Contains(out, `"msg":"request"`) {
		t.Fatalf("no request was logged: %s", out)
	}
	for _, secret := range []string{ts.apiKey, ts.admin, created.Secret} {
		if strings.Contains(out, secret) {
			t.Errorf("a secret is in the log:\n%s", out)
		}
	}
}

// TestAccessLogLine checks the one line a request logs through
// Config.AccessLog: the route pattern, the final status (an error's
// included) and nothing else.
func TestAccessLogLine(t *testing.T) {
	var logs domaintest.SyncBuffer
	ts := newTestServer(t, func(c *handlers.Config) { c.AccessLog = &logs })
	logs.Reset()
	ts.do("GET", "/pets/12345", "").wantError(404, "not_found")
	line := logs.String()
	for _, want := range []string{"level=INFO msg=request request_id=", " method=GET route=/pets/:petId status=404 bytes=", " duration=", " remote=127.0.0.1\n"} {
		if !strings.Contains(line, want) {
			t.Errorf("access line %q lacks %q", line, want)
		}
	}
	if strings.Count(line, "\n") != 1 {
		t.Errorf("want exactly one line, got %q", line)
	}
}

func TestSecurityHeaders(t *testing.T) {
	ts := newTestServer(t)
	for _, path := range []string{"/pets", "/nope", "/openapi.yaml"} {
		res := ts.send("GET", path, "", http.Header{})
		h := res.header
		if h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
			h.Get("Strict-Transport-Security") != "" {
			t.Errorf("GET %s over plain HTTP: headers %v", path, h)
		}
	}
	// Over TLS: HSTS, and nothing below TLS 1.2.
	tlsServer := httptest.NewUnstartedServer(ts.srv)
	tlsServer.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	tlsServer.StartTLS()
	defer tlsServer.Close()
	res, err := tlsServer.Client().Get(tlsServer.URL + "/pets")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Header.Get("Strict-Transport-Security") == "" {
		t.Errorf("no HSTS over TLS: %v", res.Header)
	}
}

func TestRateLimit(t *testing.T) {
	ts := newTestServer(t, func(c *handlers.Config) { c.RateLimit = 1 }) // burst 2
	var statuses []int
	var last *response
	for range 4 {
		last = ts.send("GET", "/pets", "", http.Header{})
		statuses = append(statuses, last.status)
	}
	if statuses[0] != 200 || statuses[3] != 429 {
		t.Fatalf("statuses %v: want the burst served, then 429", statuses)
	}
	last.wantError(429, "rate_limited")
	if last.header.Get("Retry-After") != "1" {
		t.Errorf("429 with Retry-After %q, want 1", last.header.Get("Retry-After"))
	}
	// The IETF httpapi draft's fields, on the answers served and refused:
	// the burst of 2 refills in 2 s; on the 429 nothing is left, and more
	// comes in the Retry-After's second.
	if got := last.header.Values("RateLimit-Policy"); len(got) != 1 || got[0] != `"per-client";q=2;w=2` {
		t.Errorf("RateLimit-Policy %q", got)
	}
	if got := last.header.Get("RateLimit"); got != `"per-client";r=0;t=1` {
		t.Errorf("RateLimit on the 429: %q", got)
	}
	// A client's first answer: one of the two left.
	req := httptest.NewRequest(http.MethodGet, "/pets", nil)
	req.Host, req.RemoteAddr = "localhost", "192.0.2.44:4000"
	rec := httptest.NewRecorder()
	ts.srv.ServeHTTP(rec, req)
	if got := rec.Header().Get("RateLimit"); rec.Code != 200 || got != `"per-client";r=1;t=1` {
		t.Errorf("a client's first answer: %d, RateLimit %q", rec.Code, got)
	}
	// Off with the limiter.
	if h := newTestServer(t).send("GET", "/pets", "", http.Header{}).header; h.Get("RateLimit") != "" || h.Get("RateLimit-Policy") != "" {
		t.Errorf("RateLimit fields with the rate limit off: %v", h)
	}
}

// TestRateLimitHuge: a rate so high that twice it is beyond int64 still
// serves requests (the burst once overflowed to a negative number of
// tokens, and every request got 429).
func TestRateLimitHuge(t *testing.T) {
	ts := newTestServer(t, func(c *handlers.Config) { c.RateLimit = 5e18 })
	for range 3 {
		ts.send("GET", "/pets", "", http.Header{}).wantStatus(200)
	}
}

// TestSlowBodiesTakeNoSlot holds two requests open (their bodies arrive
// slowly) on a server that serves two at a time: a request takes its slot
// only once its body is read, so a third request is served, and so are the
// probes and the admin API; the slow ones are then served too.
func TestSlowBodiesTakeNoSlot(t *testing.T) {
	ts := newTestServer(t, func(c *handlers.Config) { c.MaxInFlight = 2 })
	var wg sync.WaitGroup
	var writers []*io.PipeWriter
	// Runs before the server's own cleanup, which waits for open requests.
	t.Cleanup(func() {
		for _, pw := range writers {
			pw.Close()
		}
	})
	statuses := make(chan int, 2)
	for range 2 {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		req, _ := http.NewRequest("POST", ts.http.URL+"/categories", pr)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", ts.apiKey)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res, err := http.DefaultClient.Do(req); err == nil {
				statuses <- res.StatusCode
				res.Body.Close()
			}
		}()
		_, _ = pw.Write([]byte(`{"name":`)) // the handler is now reading
	}
	ts.send("GET", "/pets", "", http.Header{}).wantStatus(200)
	ts.send("GET", "/healthz", "", http.Header{}).wantStatus(200)
	ts.adminDo("GET", "/admin/project", "").wantStatus(200)
	for _, pw := range writers {
		_, _ = pw.Write([]byte(`"held"}`))
		pw.Close()
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != 201 {
			t.Errorf("a slow body, once complete: %d", st)
		}
	}
}

// TestSlowHeadersAreDropped: a client that never finishes its headers is
// disconnected within the read-header timeout (10 s).
func TestSlowHeadersAreDropped(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the 10 s header timeout")
	}
	t.Parallel()
	ts := newTestServer(t)
	srv := httptest.NewUnstartedServer(ts.srv)
	srv.Config = listen.NewHTTPServer(ts.srv, nil, nil)
	srv.Start()
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := conn.Write([]byte("GET /pets HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err = io.ReadAll(conn) // returns when the server closes the connection
	took := time.Since(start)
	if err != nil || took > 11*time.Second {
		t.Fatalf("connection with unfinished headers: closed after %v (err %v), want within 10 s", took, err)
	}
	t.Logf("dropped after %v", took.Round(time.Millisecond))
}

// TestRateLimitGroupsIPv6By64: addresses of one IPv6 /64 share one limit,
// through the whole stack; another /64 has its own.
func TestRateLimitGroupsIPv6By64(t *testing.T) {
	ts := newTestServer(t, func(c *handlers.Config) { c.RateLimit = 1 }) // burst 2
	get := func(remote string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/pets", nil)
		req.Host = "localhost"
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		ts.srv.ServeHTTP(rec, req)
		return rec
	}
	for i := range 2 {
		if rec := get(fmt.Sprintf("[2001:db8:0:1::%x]:4000", i+1)); rec.Code != http.StatusOK {
			t.Fatalf("request %d of the burst: %d", i, rec.Code)
		}
	}
	rec := get("[2001:db8:0:1:abcd::99]:4000")
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), `"rate_limited"`) {
		t.Errorf("a third address of the same /64: %d %s; want 429 rate_limited", rec.Code, rec.Body)
	}
	if rec := get("[2001:db8:0:2::1]:4000"); rec.Code != http.StatusOK {
		t.Errorf("another /64: %d; want 200", rec.Code)
	}
}

// TestRefusalsCloseTheConnection: a 429 and a 503 ask the client to close
// its connection, and the server closes it, so that a client turned away
// does not keep a descriptor.
func TestRefusalsCloseTheConnection(t *testing.T) {
	ts := newTestServer(t, func(c *handlers.Config) { c.RateLimit = 1 }) // burst 2
	var res *response
	for range 3 {
		res = ts.send("GET", "/pets", "", http.Header{})
	}
	res.wantError(http.StatusTooManyRequests, "rate_limited")

	conn, err := net.Dial("tcp", ts.http.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /pets HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	raw, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, raw.Body)
	raw.Body.Close()
	if raw.StatusCode != http.StatusTooManyRequests || !raw.Close {
		t.Fatalf("status %d, Connection %q; want 429 and close", raw.StatusCode, raw.Header.Get("Connection"))
	}
	if n, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after the 429 the connection is still open (read %v, %v)", n, err)
	}
}
