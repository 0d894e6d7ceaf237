package handlers_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
