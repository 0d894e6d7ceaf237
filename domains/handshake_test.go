package domains

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"

	"petstore/domains/certs"
	"petstore/domains/dnscheck"
	"petstore/domains/domaintest/testcert"
	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/storetest"
)

// TestHandshakeWithoutCertificateReadsNoStorage: a handshake for a
// verified domain that has no certificate yet fails without a storage
// read; one whose certificate is on record but not in the cache yet (as
// after a restart) is loaded from storage.
func TestHandshakeWithoutCertificateReadsNoStorage(t *testing.T) {
	const without, with = "nocert.example.org", "cert.example.org"
	m, db := countingManager(t,
		store.Domain{Name: without, State: store.DomainVerified, Certificate: store.Certificate{State: store.CertFailed}},
		store.Domain{Name: with, State: store.DomainVerified, Certificate: store.Certificate{State: store.CertIssued}})
	storeSelfSigned(t, db, with)

	before := db.Reads()
	if err := handshake(m, without); err == nil {
		t.Fatalf("a handshake for %s, which has no certificate, succeeded", without)
	}
	if n := db.Reads() - before; n != 0 {
		t.Errorf("a handshake for %s, which has no certificate, read storage %d times", without, n)
	}
	if err := handshake(m, with); err != nil {
		t.Fatalf("a handshake for %s, whose certificate is in storage: %v", with, err)
	}
}

// handshake runs a TLS handshake for name against the manager's listener
// configuration and returns the client's error.
func handshake(m *Manager, name string) error {
	client, server := net.Pipe()
	defer client.Close()
	go func() {
		defer server.Close()
		_ = tls.Server(server, m.TLSConfig()).Handshake()
	}()
	return tls.Client(client, &tls.Config{ServerName: name, InsecureSkipVerify: true}).Handshake()
}

// countingCA is the CA of countingManager's manager, never contacted: no
// attempt starts.
const countingCA = "https://127.0.0.1:1/dir"

// storeSelfSigned puts a self-signed certificate for name where certmagic
// looks for one from countingCA, as if obtained earlier or by another
// instance, and returns the certificate's storage key.
func storeSelfSigned(t *testing.T, db store.KeyValue, name string) string {
	t.Helper()
	iss := certmagic.ACMEIssuer{CA: countingCA}
	certPEM, keyPEM := testcert.SelfSigned(t, name, 1)
	for key, value := range map[string][]byte{
		certmagic.StorageKeys.SiteCert(iss.IssuerKey(), name):       certPEM,
		certmagic.StorageKeys.SitePrivateKey(iss.IssuerKey(), name): keyPEM,
		certmagic.StorageKeys.SiteMeta(iss.IssuerKey(), name):       []byte(`{"sans":["` + name + `"]}`),
	} {
		if err := certs.Storage(db).Store(context.Background(), key, value); err != nil {
			t.Fatal(err)
		}
	}
	return certmagic.StorageKeys.SiteCert(iss.IssuerKey(), name)
}

// countingManager is a manager with certificates (from a CA never
// contacted) over a store that counts its key/value reads, holding the
// domains given.
func countingManager(t *testing.T, ds ...store.Domain) (*Manager, *storetest.ReadCounter) {
	t.Helper()
	// Opened here: domaintest imports this package.
	bolt, err := boltstore.Open(filepath.Join(t.TempDir(), "petstore.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bolt.Close() })
	db := &storetest.ReadCounter{Store: bolt}
	for _, d := range ds {
		if err := db.AddDomain(context.Background(), &d, nil); err != nil {
			t.Fatal(err)
		}
	}
	m, err := NewManager(Config{
		Store:     db,
		Platform:  dnscheck.Platform{Domain: "petstore.test", CNAMETarget: "cname.petstore.test"},
		Checker:   &dnscheck.Checker{},
		ACME:      &ACME{CA: countingCA},
		TickEvery: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m, db
}

// TestListingReadsNoCertificateStorage: listing 100 domains whose
// certificates are on record, whole or by page, reads no storage: the
// certificate state is the one stored with each domain.
func TestListingReadsNoCertificateStorage(t *testing.T) {
	var ds []store.Domain
	notAfter := time.Now().Add(24 * time.Hour)
	for i := range 100 {
		ds = append(ds, store.Domain{
			Name: fmt.Sprintf("d%d.example.org", i), State: store.DomainVerified,
			Certificate: store.Certificate{State: store.CertIssued, Serial: fmt.Sprint(i), NotAfter: &notAfter},
		})
	}
	m, db := countingManager(t, ds...)
	ctx := context.Background()
	before := db.Reads()
	all, err := m.List(ctx)
	if err != nil || len(all) != 100 {
		t.Fatalf("list: %d domains, %v", len(all), err)
	}
	page, _, err := m.Page(ctx, 100, nil)
	if err != nil || len(page) != 100 {
		t.Fatalf("page: %d domains, %v", len(page), err)
	}
	for _, d := range append(all, page...) {
		if d.Certificate.State != store.CertIssued {
			t.Fatalf("%s: certificate %q, want the stored issued", d.Name, d.Certificate.State)
		}
	}
	if n := db.Reads() - before; n != 0 {
		t.Errorf("listing 100 domains read storage %d times", n)
	}
}

// TestChallengeLookupsOnlyForAttachedNames: HTTP-01 challenge requests for
// names that are not attached reach the next handler with no storage
// read; only an attached name's challenge is looked up in storage (one
// another instance may have started).
func TestChallengeLookupsOnlyForAttachedNames(t *testing.T) {
	m, db := countingManager(t, store.Domain{Name: "shop.example.org", State: store.DomainVerified})
	var passed atomic.Int64
	h := m.HTTPChallengeHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		passed.Add(1)
		w.WriteHeader(http.StatusMisdirectedRequest)
	}))
	get := func(host string) int {
		r := httptest.NewRequest(http.MethodGet, "/.well-known/acme-challenge/c29tZS10b2tlbg", nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	before := db.Reads()
	for i := range 1000 {
		if code := get(fmt.Sprintf("n%d.example.net:80", i)); code != http.StatusMisdirectedRequest {
			t.Fatalf("unattached name answered %d", code)
		}
	}
	if n := db.Reads() - before; n != 0 || passed.Load() != 1000 {
		t.Errorf("1,000 challenge requests for unattached names read storage %d times; %d reached the next handler", n, passed.Load())
	}
	before = db.Reads()
	get("Shop.Example.org")
	if n := db.Reads() - before; n == 0 {
		t.Errorf("a challenge request for an attached name, started nowhere in memory, was not looked up in storage")
	}
}

// handshakeNames runs a TLS handshake for name and returns the names of
// the certificate the server presented.
func handshakeNames(m *Manager, name string) ([]string, error) {
	client, server := net.Pipe()
	defer client.Close()
	go func() {
		defer server.Close()
		_ = tls.Server(server, m.TLSConfig()).Handshake()
	}()
	c := tls.Client(client, &tls.Config{ServerName: name, InsecureSkipVerify: true})
	if err := c.Handshake(); err != nil {
		return nil, err
	}
	return c.ConnectionState().PeerCertificates[0].DNSNames, nil
}

// TestWildcardHandshakes: with a verified wildcard whose certificate is in
// storage (obtained earlier, or by another instance), handshakes for names
// one label below its base get that certificate, loaded once; a name two
// labels below gets none, without a storage read (so no order either);
// once the wildcard is removed, every name under it fails at once.
func TestWildcardHandshakes(t *testing.T) {
	const wildcard = "*.shop.example.org"
	m, db := countingManager(t, store.Domain{Name: wildcard, State: store.DomainVerified, Certificate: store.Certificate{State: store.CertIssued}})
	ctx := context.Background()
	certKey := storeSelfSigned(t, db, wildcard)

	for _, name := range []string{"a.shop.example.org", "b.shop.example.org", "A.Shop.Example.org"} {
		names, err := handshakeNames(m, name)
		if err != nil {
			t.Fatalf("handshake for %s: %v", name, err)
		}
		if len(names) != 1 || names[0] != wildcard {
			t.Errorf("%s got a certificate for %v, want %s", name, names, wildcard)
		}
	}
	before := db.Reads()
	for _, name := range []string{"x.y.shop.example.org", "shop.example.org", "a.shopx.example.org"} {
		if names, err := handshakeNames(m, name); err == nil {
			t.Errorf("a handshake for %s succeeded with %v", name, names)
		}
		if m.CertificateAllowed(name) {
			t.Errorf("%s may get a certificate: the decision function would order one", name)
		}
	}
	if n := db.Reads() - before; n != 0 {
		t.Errorf("handshakes for names no wildcard covers read storage %d times", n)
	}

	if !certs.Storage(db).Exists(ctx, certKey) {
		t.Fatal("no certificate in storage before removal")
	}
	if err := m.Remove(ctx, wildcard); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.shop.example.org", "c.shop.example.org"} {
		if names, err := handshakeNames(m, name); err == nil {
			t.Errorf("after removal, a handshake for %s succeeded with %v", name, names)
		}
	}
	if certs.Storage(db).Exists(ctx, certKey) {
		t.Errorf("the wildcard's certificate is still in storage: %s", certKey)
	}
}
