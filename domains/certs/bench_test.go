package certs

import (
	"context"
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"petstore/domains/domaintest/testcert"
)

// BenchmarkCertificateLookup is what a TLS handshake asks of certmagic:
// the certificate for the SNI, from a cache of 1 and of 1,000 certificates.
func BenchmarkCertificateLookup(b *testing.B) {
	for _, n := range []int{1, 1000} {
		tc := benchCerts(b, n).TLSConfig()
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

// benchCerts is a Certs over an empty store that serves n attached domains
// d0.example.com ..., each with a self-signed certificate in its cache.
func benchCerts(b *testing.B, n int) *Certs {
	b.Helper()
	c := New(Config{
		Store: openStore(b),
		// Never contacted: every name's certificate is in the cache.
		ACME:      ACME{CA: "https://127.0.0.1:1/dir"},
		Names:     func(string) Name { return Name{Served: true, Allowed: true} },
		TickEvery: time.Hour,
	})
	b.Cleanup(c.Close)
	for i := range n {
		certPEM, keyPEM := testcert.SelfSigned(b, fmt.Sprintf("d%d.example.com", i), int64(i+1))
		if _, err := c.certs.CacheUnmanagedCertificatePEMBytes(context.Background(), certPEM, keyPEM, nil); err != nil {
			b.Fatal(err)
		}
	}
	return c
}
