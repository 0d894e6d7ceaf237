package handlers_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"petstore/handlers"
)

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
