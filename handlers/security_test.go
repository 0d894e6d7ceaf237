package handlers_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"petstore/domains/domaintest"
	"petstore/handlers"
	"petstore/server"
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
// disconnected once the header timeout NewHTTPServer is given (main.go's
// --header-timeout) has passed, not at the later read timeout. The timeout
// is shortened here, so that the test does not wait for the default.
func TestSlowHeadersAreDropped(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	ts := newTestServer(t)
	srv := httptest.NewUnstartedServer(ts.srv)
	srv.Config = server.NewHTTPServer(ts.srv, nil, nil, timeout)
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
	// The bound leaves a loaded machine time, and is still far below the
	// default header timeout and the read timeout, either of which would
	// close the connection if the timeout given were not applied.
	const bound = 5 * time.Second
	if d := min(srv.Config.ReadTimeout, server.DefaultHeaderTimeout); d < 2*bound {
		t.Fatalf("a fallback timeout of %v is too close to the bound %v to tell apart", d, bound)
	}
	_ = conn.SetReadDeadline(time.Now().Add(bound))
	_, err = io.ReadAll(conn) // returns when the server closes the connection
	took := time.Since(start)
	if err != nil {
		t.Fatalf("connection with unfinished headers: closed after %v (err %v), want within %v", took, err, bound)
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

// h2Server serves ts over TLS with HTTP/2, configured as main.go does.
func h2Server(t *testing.T, ts *testServer) string {
	t.Helper()
	s := httptest.NewUnstartedServer(ts.srv)
	s.Config = server.NewHTTPServer(ts.srv, nil, nil, server.DefaultHeaderTimeout)
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	return s.Listener.Addr().String()
}

// h2Conn is a raw HTTP/2 client connection from a chosen loopback address.
type h2Conn struct {
	mu   sync.Mutex
	fr   *http2.Framer
	conn net.Conn
	enc  *hpack.Encoder
	buf  bytes.Buffer
	// answered receives the id of every stream the server sent headers on.
	answered chan uint32
}

// dialH2 opens an HTTP/2 connection from local to addr whose receive window
// is zero: the server may send headers, never a byte of a body.
func dialH2(t *testing.T, local, addr string, window uint32) *h2Conn {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	c := &h2Conn{fr: http2.NewFramer(conn, conn), conn: conn, answered: make(chan uint32, 1000)}
	c.enc = hpack.NewEncoder(&c.buf)
	c.mu.Lock()
	_ = c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: window})
	c.mu.Unlock()
	go func() { // read and acknowledge what the server sends; give no window
		for {
			f, err := c.fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					c.mu.Lock()
					_ = c.fr.WriteSettingsAck()
					c.mu.Unlock()
				}
			case *http2.HeadersFrame:
				select {
				case c.answered <- f.StreamID:
				default:
				}
			}
		}
	}()
	return c
}

// open starts stream id with a request of method on path, with or without
// a body to follow.
func (c *h2Conn) open(t *testing.T, id uint32, method, path string, endStream bool) {
	t.Helper()
	c.openWith(t, id, method, path, "psk_none", nil, endStream)
}

// openWith starts stream id with a request carrying apiKey and, when body is
// not nil, that body.
func (c *h2Conn) openWith(t *testing.T, id uint32, method, path, apiKey string, body []byte, endStream bool) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Reset()
	for _, f := range [][2]string{{":method", method}, {":path", path}, {":scheme", "https"}, {":authority", "localhost"},
		{"content-type", "application/json"}, {"x-api-key", apiKey}} {
		_ = c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.buf.Bytes(), EndStream: endStream && body == nil, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	if body != nil {
		if err := c.fr.WriteData(id, endStream, body); err != nil {
			t.Fatal(err)
		}
	}
}

func (c *h2Conn) reset(id uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
}

// slowBody starts a POST /pets from local whose body arrives a byte a
// second, and returns when its headers are sent.
func slowBody(t *testing.T, local, addr string, stop <-chan struct{}) {
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Errorf("slow client %s: %v", local, err)
		return
	}
	_, _ = io.WriteString(conn, "POST /pets HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
	go func() {
		defer conn.Close()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
}

// TestSlowClientsCannotTakeEverySlot: four addresses send request bodies a
// byte a second, 100 requests each (their rate limit's burst), and a fifth
// holds HTTP/2 streams whose flow-control window stays shut, on a server
// that serves 32 requests at once, 8 per client. Throughout, another
// client's GET /pets, the probes and the dashboard are answered.
func TestSlowClientsCannotTakeEverySlot(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *handlers.Config) {
		c.MaxInFlight, c.MaxClientInFlight, c.RateLimit = 32, 8, handlers.DefaultRateLimit
	})
	plain := productionServer(t, ts)
	tlsAddr := h2Server(t, ts)
	stop := make(chan struct{})
	defer close(stop)
	for i := range 4 {
		for range 100 {
			slowBody(t, fmt.Sprintf("127.0.0.%d", 2+i), plain, stop)
		}
	}
	h2 := dialH2(t, "127.0.0.6", tlsAddr, 0)
	for i := range 90 { // within the connection's 100 streams
		h2.open(t, uint32(2*i+1), "GET", "/", true)
	}
	other := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true,
	}}
	for round := range 3 {
		for _, target := range []string{"http://" + plain + "/pets", "http://" + plain + "/healthz", "https://" + tlsAddr + "/pets", "https://" + tlsAddr + "/dashboard/"} {
			res, err := other.Get(target)
			if err != nil {
				t.Fatalf("round %d, another client's GET %s: %v", round, target, err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("round %d, another client's GET %s: %d %s", round, target, res.StatusCode, body)
			}
		}
		time.Sleep(time.Second) // the slow bodies go on
	}
}

// TestResetStreamsAreNotErrors: 1,000 HTTP/2 streams reset by their client,
// half of them writes reset right after their body (the store sees a
// canceled request), half of them reads reset while their answer waits on
// a shut window, give no 500 in the metrics and no error in the log.
func TestResetStreamsAreNotErrors(t *testing.T) {
	var logs domaintest.SyncBuffer
	ts := newTestServer(t, func(c *handlers.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.MaxClientInFlight = -1
	})
	ts.do(http.MethodPost, "/categories", `{"name":"dogs"}`).wantStatus(http.StatusCreated)
	addr := h2Server(t, ts)
	for range 10 {
		c := dialH2(t, "127.0.0.1", addr, 0)
		for i := range 50 {
			id := uint32(4*i + 1)
			c.openWith(t, id, "POST", "/pets", ts.apiKey, []byte(`{"name":"Rex","categoryId":1}`), true)
			c.reset(id)
			c.open(t, id+2, "GET", "/", true)
			select { // the handler runs, its answer blocked by the window
			case <-c.answered:
			case <-time.After(30 * time.Second):
				t.Fatal("no answer's headers within 30 s")
			}
			c.reset(id + 2)
		}
	}
	domaintest.WaitFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		m := ts.adminDo(http.MethodGet, "/metrics", "").wantStatus(http.StatusOK)
		if n := requestsCounted(string(m.body), `route="/"`, `method="GET"`); n < 500 {
			return fmt.Errorf("%d of the 500 reset reads counted", n)
		}
		return nil
	})
	m := ts.adminDo(http.MethodGet, "/metrics", "").wantStatus(http.StatusOK)
	if strings.Contains(string(m.body), `status="500"`) {
		t.Errorf("a 500 in the metrics:\n%s", m.body)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("errors in the log:\n%s", logs.String())
	}
	t.Logf("writes counted: %d, of which abandoned (499): %d", requestsCounted(string(m.body), `route="/pets"`, `method="POST"`),
		requestsCounted(string(m.body), `route="/pets"`, `method="POST"`, `status="499"`))
}

// requestsCounted sums the petstore_http_requests_total series whose labels
// include every one of labels.
func requestsCounted(metrics string, labels ...string) int {
	n := 0
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, "petstore_http_requests_total{") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		var v int
		if i := strings.LastIndexByte(line, ' '); ok && i > 0 {
			if _, err := fmt.Sscan(line[i+1:], &v); err == nil {
				n += v
			}
		}
	}
	return n
}

// withoutCredentialLimit sets the limit on failed credential attempts past
// what any test sends, for tests that send many wrong credentials on
// purpose to check each 401.
func withoutCredentialLimit(c *handlers.Config) { c.CredentialFailures = 1 << 16 }

// operatorTargets are requests on operator paths: every operation of the
// admin document, the admin document itself, and a path under /admin that
// does not exist.
func operatorTargets(t *testing.T) [][2]string {
	return append(adminRequests(t), [2]string{"GET", "/admin/nope"}, [2]string{"GET", "/metrics/nope"})
}

// TestOperatorPathsNeedTheTokenForEveryMethod: OPTIONS, methods the path
// does not have and paths that do not exist answer 401 without the token,
// as the operations do; with it, OPTIONS lists the methods as before.
// Public paths keep answering OPTIONS to anyone.
func TestOperatorPathsNeedTheTokenForEveryMethod(t *testing.T) {
	ts := newTestServer(t, withoutCredentialLimit)
	for _, r := range operatorTargets(t) {
		for _, method := range []string{"OPTIONS", "PROPFIND", r[0]} {
			for _, h := range []http.Header{{}, {"Authorization": {"Bearer nope"}}} {
				ts.with(t).send(method, r[1], "", h).wantError(401, "unauthorized")
			}
		}
	}
	admin := http.Header{"Authorization": {"Bearer " + ts.admin}}
	res := ts.send("OPTIONS", "/admin/project", "", admin).wantStatus(204)
	if allow := res.header.Get("Allow"); !strings.Contains(allow, "PATCH") {
		t.Errorf("OPTIONS with the token: Allow %q", allow)
	}
	ts.send("PROPFIND", "/admin/project", "", admin.Clone()).wantError(405, "method_not_allowed")
	ts.send("OPTIONS", "/pets", "", http.Header{}).wantStatus(204)
}

// TestCredentialFailuresAreLimited: with the general rate limit off, a
// wrong credential from an address that failed 10 times within a minute
// gets 429 with Retry-After, on the public and the admin API, while the
// right API key and the right admin token from that address are accepted
// (a stale key in a script must not lock its owner out); reads that need
// no credential, and other addresses, go on.
func TestCredentialFailuresAreLimited(t *testing.T) {
	ts := newTestServer(t) // RateLimit 0: the general limiter is off
	for i := range handlers.DefaultCredentialFailures {
		h := http.Header{"X-Api-Key": {"psk_wrong" + strconv.Itoa(i)}}
		if i%2 == 1 {
			h = http.Header{"Authorization": {"Bearer wrong"}}
			ts.send("GET", "/admin/project", "", h).wantError(401, "unauthorized")
			continue
		}
		ts.send("POST", "/categories", `{"name":"x"}`, h).wantError(401, "unauthorized")
	}
	for _, r := range []struct {
		method, path, body string
		right, wrong       http.Header
		status             int
	}{
		{"POST", "/categories", `{"name":"x"}`, http.Header{"X-Api-Key": {ts.apiKey}}, http.Header{"X-Api-Key": {"psk_wrong"}}, 201},
		{"GET", "/admin/project", "", http.Header{"Authorization": {"Bearer " + ts.admin}}, http.Header{"Authorization": {"Bearer wrong"}}, 200},
		{"OPTIONS", "/admin/project", "", http.Header{"Authorization": {"Bearer " + ts.admin}}, http.Header{"Authorization": {"Bearer wrong"}}, 204},
		{"GET", "/admin/openapi.yaml", "", http.Header{"Authorization": {"Bearer " + ts.admin}}, http.Header{"Authorization": {"Bearer wrong"}}, 200},
	} {
		res := ts.send(r.method, r.path, r.body, r.wrong).wantError(429, "rate_limited")
		if n, err := strconv.Atoi(res.header.Get("Retry-After")); err != nil || n < 1 || n > 60 {
			t.Errorf("%s %s: Retry-After %q, want 1 to 60 seconds", r.method, r.path, res.header.Get("Retry-After"))
		}
		ts.send(r.method, r.path, r.body, r.right).wantStatus(r.status)
	}
	// Still locked out for wrong credentials after the right ones.
	ts.send("GET", "/admin/project", "", http.Header{"Authorization": {"Bearer wrong"}}).wantError(429, "rate_limited")
	ts.send("GET", "/categories", "", http.Header{}).wantStatus(200)

	// Another address is not locked out.
	req := httptest.NewRequest("POST", "/categories", strings.NewReader(`{"name":"cats"}`))
	req.Host, req.RemoteAddr = "localhost", "127.0.0.2:40000"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", ts.apiKey)
	rec := httptest.NewRecorder()
	ts.srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Errorf("another address: %d %s", rec.Code, rec.Body)
	}
}

// TestCleartextListenerNeverServesOperatorPaths: on --http-listen (public
// port 80 beside TLS), a loopback Host or an absolute-form request line
// must not reach the admin API, the dashboard, metrics or backups in
// cleartext: 404, with the token too. The API stays served there.
func TestCleartextListenerNeverServesOperatorPaths(t *testing.T) {
	ts := newTestServer(t)
	plain := httptest.NewServer(ts.srv.HTTPSRedirect())
	t.Cleanup(plain.Close)
	targets := append(operatorTargets(t), [2]string{"GET", "/dashboard/"}, [2]string{"OPTIONS", "/admin/project"})
	for _, host := range []string{"localhost", "127.0.0.1", "[::1]"} {
		for _, r := range targets {
			req, err := http.NewRequest(r[0], plain.URL+r[1], nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = host
			req.Header.Set("Authorization", "Bearer "+ts.admin)
			res, err := noRedirects.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusNotFound {
				t.Errorf("%s %s, Host %s, on the cleartext listener: %d %s", r[0], r[1], host, res.StatusCode, body)
				continue
			}
			checkErrorBody(t, req, &response{tb: t, status: res.StatusCode, header: res.Header, body: body})
		}
	}
	addr := strings.TrimPrefix(plain.URL, "http://")
	res, body := rawExchange(t, addr, "GET http://localhost/admin/backup HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer "+ts.admin+"\r\n\r\n")
	if res.StatusCode != http.StatusNotFound || bytes.Contains(body, []byte("bbolt")) {
		t.Errorf("absolute-form request line for the backup: %d", res.StatusCode)
	}
	res, body = rawExchange(t, addr, "GET /pets HTTP/1.1\r\nHost: localhost\r\n\r\n")
	if res.StatusCode != http.StatusOK {
		t.Errorf("GET /pets on the cleartext listener: %d %s", res.StatusCode, body)
	}
}
