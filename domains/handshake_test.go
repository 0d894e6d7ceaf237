package domains

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"

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
	certPEM, keyPEM := selfSigned(t, with, 1)
	for key, value := range map[string][]byte{
		certmagic.StorageKeys.SiteCert(iss.IssuerKey(), with):       certPEM,
		certmagic.StorageKeys.SitePrivateKey(iss.IssuerKey(), with): keyPEM,
		certmagic.StorageKeys.SiteMeta(iss.IssuerKey(), with):       []byte(`{"sans":["` + with + `"]}`),
	} {
		if err := CertStorage(db).Store(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}
	m, err := NewManager(Config{
		Store:     db,
		Platform:  Platform{Domain: "petstore.test", CNAMETarget: "cname.petstore.test"},
		Checker:   &Checker{CNAMETarget: "cname.petstore.test"},
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

// selfSigned returns a self-signed certificate of name, valid from an hour
// ago for a day, and its key, both PEM-encoded.
func selfSigned(tb testing.TB, name string, serial int64) (certPEM, keyPEM []byte) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(23 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}
