package domains_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/domains"
	"petstore/domains/domaintest"
	"petstore/store"
)

// faultyCA is pebble behind a proxy of the test's own that answers new
// orders itself with the status and problem a CA sends when it is down or
// limits this account; everything else reaches pebble.
func faultyCA(t *testing.T, pebble *domaintest.Pebble, status int, problem string) *httptest.Server {
	t.Helper()
	target, err := url.Parse(pebble.DirectoryURL())
	if err != nil {
		t.Fatal(err)
	}
	target.Path = ""
	var self string
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = pebble.HTTPClient().Transport
	rp.ModifyResponse = func(r *http.Response) error {
		// The directory and every URL pebble hands out point back here.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		body = bytes.ReplaceAll(body, []byte(target.Host), []byte(self))
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		for _, h := range []string{"Location", "Link"} {
			for i, v := range r.Header.Values(h) {
				r.Header[h][i] = strings.ReplaceAll(v, target.Host, self)
			}
		}
		return nil
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/order-plz") {
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, problem)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	self = strings.TrimPrefix(srv.URL, "https://")
	return srv
}

// TestCAFaultsAreWorded: a CA that answers a new order with 503 or 429
// leaves the certificate failed, with the CA's words, a next attempt and
// a reason that says which.
func TestCAFaultsAreWorded(t *testing.T) {
	dns, pebble := startCA(t, 0)
	for _, c := range []struct {
		name, problem string
		status        int
		reason        string
	}{
		{"down.example.org", `{"type":"urn:ietf:params:acme:error:serverInternal","detail":"down for maintenance","status":503}`, 503, "did not answer: down for maintenance"},
		{"limited.example.org", `{"type":"urn:ietf:params:acme:error:rateLimited","detail":"too many new orders recently","status":429}`, 429, "rate limit was reached: too many new orders recently"},
	} {
		ca := faultyCA(t, pebble, c.status, c.problem)
		m, db := acmeManager(t, dns, pebble, nil, domains.ACME{CA: ca.URL + "/dir"}, func(cfg *domains.Config) {
			cfg.ACME.TrustedRoots.AddCert(ca.Certificate())
		})
		addVerified(t, m, dns, c.name)
		cert := waitCert(t, db, c.name, "a failed attempt", 30*time.Second, func(c store.Certificate) bool { return c.State == store.CertFailed })
		if cert.NextAttemptAt == nil || !strings.Contains(cert.NextAttemptReason, c.reason) || !strings.Contains(cert.Error, strings.SplitN(c.reason, ": ", 2)[1]) {
			t.Errorf("%d: next attempt %v, reason %q, error %q; want a reason with %q", c.status, cert.NextAttemptAt, cert.NextAttemptReason, cert.Error, c.reason)
		}
	}
}
