package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"petstore/domains/domaintest"
	"petstore/handlers"
)

func withCORS(origins ...string) serverOption {
	return func(c *handlers.Config) { c.CORSOrigins = origins }
}

// preflight sends the OPTIONS request a browser sends before a write.
func preflight(t *testing.T, ts *testServer, path, origin, method string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodOptions, ts.http.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", method)
	req.Header.Set("Access-Control-Request-Headers", "content-type,x-api-key")
	res, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

func TestCORS(t *testing.T) {
	const app = "https://app.example.com"
	ts := newTestServer(t, withCORS(app, "http://localhost:3000"))

	// A preflight from a configured origin is answered for the API's
	// methods and headers.
	res := preflight(t, ts, "/pets", app, "POST")
	h := res.Header
	if res.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("preflight: %d, Allow-Origin %q", res.StatusCode, h.Get("Access-Control-Allow-Origin"))
	}
	if m := h.Get("Access-Control-Allow-Methods"); !strings.Contains(m, "POST") || !strings.Contains(m, "DELETE") || strings.Contains(m, "PATCH") {
		t.Errorf("preflight: Allow-Methods %q", m)
	}
	if a := strings.ToLower(h.Get("Access-Control-Allow-Headers")); !strings.Contains(a, "x-api-key") || !strings.Contains(a, "content-type") {
		t.Errorf("preflight: Allow-Headers %q", a)
	}
	if h.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("preflight allows credentials: keys are never cookies")
	}

	// An answer to a configured origin exposes the headers a client reads,
	// errors included.
	for _, r := range []*response{
		ts.send("GET", "/pets/1", "", http.Header{"Origin": {app}}),
		ts.send("GET", "/pets?limit=1", "", http.Header{"Origin": {app}}),
	} {
		if r.header.Get("Access-Control-Allow-Origin") != app {
			t.Errorf("%d answer: Allow-Origin %q", r.status, r.header.Get("Access-Control-Allow-Origin"))
		}
		exposed := strings.Split(r.header.Get("Access-Control-Expose-Headers"), ",")
		for _, want := range []string{"Link", "Location", "X-Request-Id", "Deprecation", "Sunset"} {
			found := false
			for _, e := range exposed {
				found = found || strings.EqualFold(strings.TrimSpace(e), want)
			}
			if !found {
				t.Errorf("%d answer: Expose-Headers %q lacks %s", r.status, exposed, want)
			}
		}
	}

	// Another origin, and every operator path, get no CORS header at all:
	// the browser keeps the answer from the script.
	if res := preflight(t, ts, "/pets", "https://evil.example", "POST"); res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from an unconfigured origin allowed")
	}
	if r := ts.send("GET", "/pets", "", http.Header{"Origin": {"https://app.example.com.evil.example"}}); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("an origin that merely starts like a configured one is allowed")
	}
	for _, p := range []string{"/admin/project", "/admin/openapi.yaml", "/dashboard/", "/metrics"} {
		if res := preflight(t, ts, p, app, "GET"); res.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight for %s: %d, Allow-Origin %q", p, res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
		}
		r := ts.send("GET", p, "", http.Header{"Origin": {app}, "Authorization": {"Bearer " + ts.admin}})
		if r.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("GET %s from another origin carries Allow-Origin", p)
		}
	}
}

// TestCORSOffByDefault: without configured origins nothing is allowed.
func TestCORSOffByDefault(t *testing.T) {
	ts := newTestServer(t)
	if res := preflight(t, ts, "/pets", "https://app.example.com", "POST"); res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight allowed with no origin configured")
	}
	if r := ts.send("GET", "/pets", "", http.Header{"Origin": {"https://app.example.com"}}); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("GET allowed with no origin configured")
	}
}

func TestCORSOriginChecked(t *testing.T) {
	specs(t) // loads publicSpec
	if _, err := handlers.New(serverConfig(t, domaintest.OpenStore(t), withCORS("https://app.example.com"))); err != nil {
		t.Fatalf("a good origin: %v", err)
	}
	for _, bad := range []string{"app.example.com", "https://app.example.com/", "https://app.example.com/shop", "ftp://x.example", "https://*.example.com", "null", "https://App.example.com", "https://app.example.com:443", "http://localhost:80"} {
		if _, err := handlers.New(serverConfig(t, domaintest.OpenStore(t), withCORS(bad))); err == nil {
			t.Errorf("origin %q accepted", bad)
		}
		if handlers.CheckCORSOrigin(bad) == nil {
			t.Errorf("origin %q passes CheckCORSOrigin", bad)
		}
	}
	for _, good := range []string{"https://app.example.com", "http://localhost:3000", "https://app.example.com:8443", "*"} {
		if err := handlers.CheckCORSOrigin(good); err != nil {
			t.Errorf("origin %q refused: %v", good, err)
		}
	}
}
