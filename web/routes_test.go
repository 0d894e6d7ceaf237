package web_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"petstore/domains/domaintest"
)

// TestSiteRoutes checks the site as the server mounts it, from Go: status
// codes, caching, the CSP, and 404s in the API's Error form.
func TestSiteRoutes(t *testing.T) {
	t.Parallel()
	ts := newServer(t, serverOptions{})

	status, h, page := ts.call(t, http.MethodGet, "/", "", nil)
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", status, h.Get("Content-Type"))
	}
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "style-src 'self'") {
		t.Errorf("GET / has the CSP %q", csp)
	}
	// (Go's client asked for gzip and unpacked it: this is the gzip
	// variant's ETag.)
	etag := h.Get("ETag")
	if status, _, body := ts.call(t, http.MethodGet, "/", "", map[string]string{"If-None-Match": etag}); status != http.StatusNotModified || len(body) != 0 {
		t.Errorf("GET / with its ETag: %d, %d bytes", status, len(body))
	}
	if status, h, body := ts.call(t, http.MethodHead, "/", "", map[string]string{"Accept-Encoding": "gzip"}); status != http.StatusOK || len(body) != 0 || h.Get("ETag") != etag {
		t.Errorf("HEAD /: %d, %d bytes, ETag %q, want %q", status, len(body), h.Get("ETag"), etag)
	}

	links := regexp.MustCompile(`(?:href|src)="(/assets/[^"]+)"`).FindAllStringSubmatch(string(page), -1)
	if len(links) != 2 {
		t.Fatalf("the reference links %d assets, want its stylesheet and script", len(links))
	}
	for _, l := range links {
		status, h, _ := ts.call(t, http.MethodGet, l[1], "", nil)
		if status != http.StatusOK || !strings.Contains(h.Get("Cache-Control"), "immutable") {
			t.Errorf("GET %s: %d, Cache-Control %q", l[1], status, h.Get("Cache-Control"))
		}
	}

	for _, path := range []string{"/assets/site.css", "/assets/nope.0123456789.js", "/assets/", "/dashboard/assets/site.css", "/dashboard/nope"} {
		status, h, body := ts.call(t, http.MethodGet, path, "", nil)
		var e struct {
			Code   string
			Status int
		}
		if status != http.StatusNotFound || !strings.HasPrefix(h.Get("Content-Type"), "application/json") ||
			json.Unmarshal(body, &e) != nil || e.Code != "not_found" || e.Status != 404 {
			t.Errorf("GET %s: %d %s %s, want a 404 Error body", path, status, h.Get("Content-Type"), body)
		}
	}

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(ts.url + "/dashboard")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/dashboard/" {
		t.Errorf("GET /dashboard: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}

	status, h, dash := ts.call(t, http.MethodGet, "/dashboard/", "", nil)
	if status != http.StatusOK || h.Get("Referrer-Policy") != "no-referrer" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("GET /dashboard/: %d, Referrer-Policy %q, CSP %q", status, h.Get("Referrer-Policy"), h.Get("Content-Security-Policy"))
	}
	for _, l := range regexp.MustCompile(`(?:href|src)="(/dashboard/assets/[^"]+)"`).FindAllStringSubmatch(string(dash), -1) {
		if status, _, _ := ts.call(t, http.MethodGet, l[1], "", nil); status != http.StatusOK {
			t.Errorf("GET %s: %d", l[1], status)
		}
	}
}

// TestSiteOnCustomDomains: a verified customer domain serves the reference
// but never the dashboard.
func TestSiteOnCustomDomains(t *testing.T) {
	t.Parallel()
	ts := newServer(t, serverOptions{dns: true})
	ts.planPro(t)
	if status := ts.admin(t, http.MethodPost, "/admin/domains", `{"name":"docs.example.com"}`, nil); status != http.StatusCreated {
		t.Fatalf("adding the domain: %d", status)
	}
	ts.dns.SetCNAME(t, "docs.example.com", domaintest.CNAMETarget)
	var d struct{ State string }
	if ts.admin(t, http.MethodPost, "/admin/domains/docs.example.com/verify", "", &d); d.State != "verified" {
		t.Fatalf("the domain is %q after verify", d.State)
	}
	host := map[string]string{"Host": "docs.example.com"}
	if status, _, body := ts.call(t, http.MethodGet, "/", "", host); status != http.StatusOK || !strings.Contains(string(body), "API reference") {
		t.Errorf("GET / on the customer's domain: %d", status)
	}
	for _, path := range []string{"/dashboard/", "/dashboard"} {
		if status, _, _ := ts.call(t, http.MethodGet, path, "", host); status != http.StatusNotFound {
			t.Errorf("GET %s on the customer's domain: %d, want 404", path, status)
		}
	}
}
