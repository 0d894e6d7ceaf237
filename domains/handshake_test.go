package domains_test

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
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"

	"petstore/domains"
	"petstore/store"
	"petstore/store/boltstore"
)

// readCountingStore is a real store that counts the key/value reads made
// through it: the certificate storage's.
type readCountingStore struct {
	*boltstore.DB
	reads atomic.Int64
}

func (s *readCountingStore) KVGet(ctx context.Context, key string) ([]byte, error) {
	s.reads.Add(1)
	return s.DB.KVGet(ctx, key)
}

func (s *readCountingStore) KVStat(ctx context.Context, key string) (store.KVInfo, error) {
	s.reads.Add(1)
	return s.DB.KVStat(ctx, key)
}

func (s *readCountingStore) KVKeys(ctx context.Context, prefix string) ([]string, error) {
	s.reads.Add(1)
	return s.DB.KVKeys(ctx, prefix)
}

// handshake runs a TLS handshake for name against the manager's listener
// configuration and returns the client's error.
func handshake(t *testing.T, m *domains.Manager, name string) error {
	t.Helper()
	client, server := net.Pipe()
	defer client.Close()
	go func() {
		defer server.Close()
		_ = tls.Server(server, m.TLSConfig()).Handshake()
	}()
	return tls.Client(client, &tls.Config{ServerName: name, InsecureSkipVerify: true}).Handshake()
}

// TestHandshakeWithoutCertificateReadsNoStorage: a handshake for a
// verified domain that has no certificate yet fails without a storage
// read; one whose certificate is on record but not in the cache yet (as
// after a restart) is loaded from storage.
func TestHandshakeWithoutCertificateReadsNoStorage(t *testing.T) {
	const ca = "https://127.0.0.1:1/dir" // never contacted: no attempt starts
	const without, with = "nocert.example.org", "cert.example.org"
	db := &readCountingStore{DB: deployedStore(t)}
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
	storeSelfSigned(t, domains.CertStorage(db), iss.IssuerKey(), with)
	m, err := domains.NewManager(domains.Config{
		Store:     db,
		Platform:  domains.Platform{Domain: "petstore.test", CNAMETarget: "cname.petstore.test"},
		Checker:   &domains.Checker{CNAMETarget: "cname.petstore.test"},
		ACME:      &domains.ACME{CA: ca},
		TickEvery: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)

	before := db.reads.Load()
	if err := handshake(t, m, without); err == nil {
		t.Fatalf("a handshake for %s, which has no certificate, succeeded", without)
	}
	if n := db.reads.Load() - before; n != 0 {
		t.Errorf("a handshake for %s, which has no certificate, read storage %d times", without, n)
	}
	if err := handshake(t, m, with); err != nil {
		t.Fatalf("a handshake for %s, whose certificate is in storage: %v", with, err)
	}
}

// storeSelfSigned puts a self-signed certificate of name, its key and its
// metadata where certmagic keeps those of issuerKey.
func storeSelfSigned(t *testing.T, s certmagic.Storage, issuerKey, name string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for k, v := range map[string][]byte{
		certmagic.StorageKeys.SiteCert(issuerKey, name):       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		certmagic.StorageKeys.SitePrivateKey(issuerKey, name): pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		certmagic.StorageKeys.SiteMeta(issuerKey, name):       []byte(`{"sans":["` + name + `"]}`),
	} {
		if err := s.Store(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
}
