package handlers_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"petstore/handlers"
)

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
