package domains

import (
	"context"
	"crypto/tls"
	"net"
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
)

// readCountingStore is a real store that counts the key/value reads made
// through it: the certificate storage's.
type readCountingStore struct {
	store.Store
	reads atomic.Int64
}

func (s *readCountingStore) KVGet(ctx context.Context, key string) ([]byte, error) {
	s.reads.Add(1)
	return s.Store.KVGet(ctx, key)
}

func (s *readCountingStore) KVStat(ctx context.Context, key string) (store.KVInfo, error) {
	s.reads.Add(1)
	return s.Store.KVStat(ctx, key)
}

func (s *readCountingStore) KVKeys(ctx context.Context, prefix string) ([]string, error) {
	s.reads.Add(1)
	return s.Store.KVKeys(ctx, prefix)
}

// TestHandshakeWithoutCertificateReadsNoStorage: a handshake for a
// verified domain that has no certificate yet fails without a storage
// read; one whose certificate is on record but not in the cache yet (as
// after a restart) is loaded from storage.
func TestHandshakeWithoutCertificateReadsNoStorage(t *testing.T) {
	const ca = "https://127.0.0.1:1/dir" // never contacted: no attempt starts
	const without, with = "nocert.example.org", "cert.example.org"
	// Opened here: domaintest imports this package.
	bolt, err := boltstore.Open(filepath.Join(t.TempDir(), "petstore.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bolt.Close() })
	db := &readCountingStore{Store: bolt}
	ctx := context.Background()
	for _, d := range []store.Domain{
		{Name: without, State: store.DomainVerified, Certificate: store.Certificate{State: store.CertFailed}},
		{Name: with, State: store.DomainVerified, Certificate: store.Certificate{State: store.CertIssued}},
	} {
		if err := db.AddDomain(ctx, &d); err != nil {
			t.Fatal(err)
		}
	}
	iss := certmagic.ACMEIssuer{CA: ca}
	certPEM, keyPEM := testcert.SelfSigned(t, with, 1)
	for key, value := range map[string][]byte{
		certmagic.StorageKeys.SiteCert(iss.IssuerKey(), with):       certPEM,
		certmagic.StorageKeys.SitePrivateKey(iss.IssuerKey(), with): keyPEM,
		certmagic.StorageKeys.SiteMeta(iss.IssuerKey(), with):       []byte(`{"sans":["` + with + `"]}`),
	} {
		if err := certs.Storage(db).Store(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}
	m, err := NewManager(Config{
		Store:     db,
		Platform:  dnscheck.Platform{Domain: "petstore.test", CNAMETarget: "cname.petstore.test"},
		Checker:   &dnscheck.Checker{},
		ACME:      &ACME{CA: ca},
		TickEvery: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)

	before := db.reads.Load()
	if err := handshake(m, without); err == nil {
		t.Fatalf("a handshake for %s, which has no certificate, succeeded", without)
	}
	if n := db.reads.Load() - before; n != 0 {
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
