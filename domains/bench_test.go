package domains

import (
	"context"
	"crypto/tls"
	"fmt"
	"path/filepath"
	"testing"

	"petstore/domains/dnscheck"
	"petstore/domains/domaintest/testcert"
	"petstore/store"
	"petstore/store/boltstore"
)

// benchManager is a manager over a store with n verified domains
// d0.example.com ... and, when certs is set, a self-signed certificate for
// each in its certificate cache.
func benchManager(b *testing.B, n int, certs bool) *Manager {
	b.Helper()
	db, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	ctx := context.Background()
	for i := range n {
		d := store.Domain{Name: fmt.Sprintf("d%d.example.com", i), State: store.DomainVerified}
		if err := db.AddDomain(ctx, &d); err != nil {
			b.Fatal(err)
		}
	}
	cfg := Config{Store: db, Platform: dnscheck.Platform{Domain: "petstore.test"}, Checker: &dnscheck.Checker{}}
	if certs {
		// Never contacted: every name's certificate is in the cache.
		cfg.ACME = &ACME{CA: "https://127.0.0.1:1/dir"}
	}
	m, err := NewManager(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(m.Close)
	if certs {
		for i := range n {
			certPEM, keyPEM := testcert.SelfSigned(b, fmt.Sprintf("d%d.example.com", i), int64(i+1))
			if _, err := m.certs.CacheUnmanagedCertificatePEMBytes(ctx, certPEM, keyPEM, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	return m
}

// BenchmarkRoute is the host-routing decision that every request pays,
// with 1 and 1,000 attached domains: it must not grow with their number.
func BenchmarkRoute(b *testing.B) {
	for _, n := range []int{1, 1000} {
		m := benchManager(b, n, false)
		for _, host := range []string{"d0.example.com", "petstore.petstore.test:443", "localhost:8080", "unknown.example.net"} {
			b.Run(fmt.Sprintf("domains=%d/host=%s", n, host), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if m.Route(host).Decision == Unknown && host != "unknown.example.net" {
						b.Fatal("not routed")
					}
				}
			})
		}
	}
}

// BenchmarkCertificateLookup is what a TLS handshake asks of certmagic:
// the certificate for the SNI, from a cache of 1 and of 1,000 certificates.
func BenchmarkCertificateLookup(b *testing.B) {
	for _, n := range []int{1, 1000} {
		m := benchManager(b, n, true)
		tc := m.TLSConfig()
		hello := &tls.ClientHelloInfo{ServerName: "d0.example.com", SupportedProtos: []string{"http/1.1"}}
		b.Run(fmt.Sprintf("certificates=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tc.GetCertificate(hello); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
