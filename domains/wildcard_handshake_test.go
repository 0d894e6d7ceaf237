package domains

import (
	"context"
	"crypto/tls"
	"net"
	"testing"

	"github.com/caddyserver/certmagic"

	"petstore/domains/certs"
	"petstore/domains/domaintest/testcert"
	"petstore/store"
)

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
	iss := certmagic.ACMEIssuer{CA: "https://127.0.0.1:1/dir"}
	certPEM, keyPEM := testcert.SelfSigned(t, wildcard, 1)
	for key, value := range map[string][]byte{
		certmagic.StorageKeys.SiteCert(iss.IssuerKey(), wildcard):       certPEM,
		certmagic.StorageKeys.SitePrivateKey(iss.IssuerKey(), wildcard): keyPEM,
		certmagic.StorageKeys.SiteMeta(iss.IssuerKey(), wildcard):       []byte(`{"sans":["` + wildcard + `"]}`),
	} {
		if err := certs.Storage(db).Store(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}

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

	certKey := certmagic.StorageKeys.SiteCert(iss.IssuerKey(), wildcard)
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
