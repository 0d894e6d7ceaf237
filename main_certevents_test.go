package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"petstore/domains/certs"
	"petstore/domains/domaintest"
	"petstore/store"
)

// certEvent is one delivery a certificate receiver got.
type certEvent struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"createdAt"`
	Data      struct {
		Name        string            `json:"name"`
		Certificate store.Certificate `json:"certificate"`
	} `json:"data"`
}

// certReceiver is a webhook receiver of the test's own: it verifies every
// signature with the Standard Webhooks library and keeps each delivery.
type certReceiver struct {
	mu     sync.Mutex
	verify *standardwebhooks.Webhook
	got    []certEvent
	times  map[string]int // webhook-id -> deliveries
	bad    []string
}

func (r *certReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.verify == nil || r.verify.Verify(body, req.Header) != nil {
		r.bad = append(r.bad, string(body))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var e certEvent
	if err := json.Unmarshal(body, &e); err != nil || e.ID != req.Header.Get("webhook-id") {
		r.bad = append(r.bad, string(body))
	}
	if r.times[e.ID]++; r.times[e.ID] == 1 {
		r.got = append(r.got, e)
	}
	w.WriteHeader(http.StatusNoContent)
}

// types lists the types received, in the order of their ids.
func (r *certReceiver) types() (types []string, events []certEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	events = slices.Clone(r.got)
	slices.SortFunc(events, func(a, b certEvent) int { return strings.Compare(a.ID, b.ID) })
	for _, e := range events {
		types = append(types, e.Type)
	}
	return types, events
}

// TestCertificateFailsThenExpiresDeliveredOnce: a short-lived certificate
// from pebble is issued; the service restarts while the CA can no longer
// validate the name (its DNS answers SERVFAIL), so every renewal fails.
// With no request to the service, a webhook subscribed to the certificate
// events gets certificate.issued, then certificate.failed, then
// certificate.expiring (once, when a sixth of the lifetime is left) and
// certificate.expired (once, after notAfter), each event exactly once, at
// the right times, every signature verified.
func TestCertificateFailsThenExpiresDeliveredOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts pebble and challtestsrv, waits for a certificate to expire")
	}
	const lifetime = 40 // seconds
	dns := domaintest.StartDNS(t)
	pebble := domaintest.StartPebble(t, dns, domaintest.PebbleOptions{Profiles: map[string]int{"short": lifetime}})
	dns.AddA(t, domaintest.CNAMETarget, "127.0.0.1")
	rootFile := filepath.Join(t.TempDir(), "pebble-roots.pem")
	if err := os.WriteFile(rootFile, pebble.RootsPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	rcv := &certReceiver{times: map[string]int{}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()

	data := filepath.Join(t.TempDir(), "petstore.db")
	args := func(renew string) []string {
		return []string{
			"--data", data, "--https-listen", net.JoinHostPort("127.0.0.1", strconv.Itoa(pebble.TLSPort)),
			"--admin-token", domaintest.AdminToken, "--domain", domaintest.PlatformDomain,
			"--acme-ca", pebble.DirectoryURL(), "--acme-ca-root", rootFile, "--acme-profile", "short",
			"--acme-caa-identity", "pebble.test", "--allow-test-tlds", "--webhook-allow-private",
			"--renew-interval", renew,
		}
	}
	env := map[string]string{"PETSTORE_DNS_RESOLVER": dns.Addr(), "PETSTORE_DNS_ALLOW_PRIVATE": "true"}
	// The first run renews nothing: the certificate is issued, and no
	// renewal can succeed before the CA is cut off.
	first := start(t, env, args("1h")...)
	first.call(t, "PATCH", "/admin/project", `{"plan":"pro"}`, adminAuth...)
	var hook struct {
		Secret string `json:"secret"`
	}
	types := []string{store.EventCertIssued, store.EventCertRenewed, store.EventCertFailed, store.EventCertExpiring, store.EventCertExpired}
	subscribe, _ := json.Marshal(map[string]any{"url": srv.URL, "events": types})
	code, body := first.call(t, "POST", "/admin/webhooks", string(subscribe), adminAuth...)
	if code != 201 || json.Unmarshal([]byte(body), &hook) != nil {
		t.Fatalf("creating the webhook: %d %s", code, body)
	}
	wh, err := standardwebhooks.NewWebhook(hook.Secret)
	if err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	rcv.verify = wh
	rcv.mu.Unlock()

	const name = "www.expiring.test"
	dns.SetCNAME(t, name, domaintest.CNAMETarget)
	if code, body := first.call(t, "POST", "/admin/domains", `{"name":"`+name+`"}`, adminAuth...); code != 201 {
		t.Fatalf("add: %d %s", code, body)
	}
	if code, body := first.call(t, "POST", "/admin/domains/"+name+"/verify", "", adminAuth...); code != 200 || !strings.Contains(body, `"state":"verified"`) {
		t.Fatalf("verify: %d %s", code, body)
	}
	var issued certEvent
	domaintest.WaitFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		got, events := rcv.types()
		if len(got) == 0 {
			return fmt.Errorf("no certificate.issued delivered")
		}
		issued = events[0]
		return nil
	})
	cert := issued.Data.Certificate
	if issued.Type != store.EventCertIssued || issued.Data.Name != name || cert.State != store.CertIssued || cert.NotAfter == nil || cert.NotBefore == nil {
		t.Fatalf("the first delivery: %+v", issued)
	}
	notAfter, expiringAt := *cert.NotAfter, *certs.ExpiringAt(cert)
	// The CA can no longer validate the name; the service's own checks
	// see only failed lookups, which never move a verified domain.
	dns.SetServfail(t, name)
	first.stop(t)

	second := start(t, env, args("1s")...)
	defer second.stop(t)
	domaintest.WaitFor(t, time.Until(notAfter)+30*time.Second, 100*time.Millisecond, func() error {
		if got, _ := rcv.types(); !slices.Contains(got, store.EventCertExpired) {
			return fmt.Errorf("delivered so far: %v", got)
		}
		return nil
	})
	got, events := rcv.types()
	t.Logf("delivered %v; notAfter %v", got, notAfter)
	var failed, expiring, expired int
	for i, e := range events {
		switch e.Type {
		case store.EventCertFailed:
			failed++
			if expiring+expired > 0 || !e.CreatedAt.Before(notAfter) {
				t.Errorf("certificate.failed at %v, after the expiry events (notAfter %v): %v", e.CreatedAt, notAfter, got)
			}
		case store.EventCertExpiring:
			expiring++
			if e.CreatedAt.Before(expiringAt) || !e.CreatedAt.Before(notAfter) || e.Data.Certificate.ExpiringNotedAt == nil || e.Data.Certificate.Serial != cert.Serial {
				t.Errorf("certificate.expiring at %v, want from %v to notAfter %v: %+v", e.CreatedAt, expiringAt, notAfter, e)
			}
		case store.EventCertExpired:
			expired++
			if e.CreatedAt.Before(notAfter) || e.Data.Certificate.State != store.CertExpired || i != len(events)-1 {
				t.Errorf("certificate.expired at %v (notAfter %v), state %s, position %d of %v", e.CreatedAt, notAfter, e.Data.Certificate.State, i, got)
			}
		case store.EventCertIssued:
			if i != 0 {
				t.Errorf("a second certificate.issued: %v", got)
			}
		default:
			t.Errorf("unexpected %s: %v", e.Type, got)
		}
		if e.Data.Name != name {
			t.Errorf("%s names %q", e.Type, e.Data.Name)
		}
	}
	if failed == 0 || expiring != 1 || expired != 1 {
		t.Errorf("delivered %v: want certificate.issued, certificate.failed (at least once), one certificate.expiring, one certificate.expired", got)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for id, n := range rcv.times {
		if n != 1 {
			t.Errorf("event %s delivered %d times", id, n)
		}
	}
	if len(rcv.bad) > 0 {
		t.Errorf("deliveries refused (bad signature or envelope): %q", rcv.bad)
	}
}
