package certs

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"

	"petstore/store"
	"petstore/store/boltstore"
)

// TestIssuersAreTheConfiguredCAs: certificates are asked of the configured
// CAs, in their order, and of no other: not of Let's Encrypt, which
// certmagic gives every config that names no issuer.
func TestIssuersAreTheConfiguredCAs(t *testing.T) {
	const first, second = "https://127.0.0.1:1/dir", "https://127.0.0.1:2/dir" // never contacted
	m := New(Config{
		Store:     openStore(t),
		ACME:      ACME{CA: first, FallbackCAs: []string{second}},
		Names:     func(string) Name { return Name{} },
		TickEvery: time.Hour,
	})
	t.Cleanup(m.Close)
	want := []string{(&certmagic.ACMEIssuer{CA: first}).IssuerKey(), (&certmagic.ACMEIssuer{CA: second}).IssuerKey()}
	for what, issuers := range map[string][]certmagic.Issuer{
		"the attempts'": m.obtainer.Issuers, "maintenance's": m.certs.Issuers, "on-demand": m.onDemand.Issuers,
	} {
		var got []string
		for _, iss := range issuers {
			got = append(got, iss.IssuerKey())
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s issuers: %v, want %v", what, got, want)
		}
	}
}

// openStore opens a bbolt store in a temporary folder, closed when the
// test ends. Not domaintest's: domaintest imports package domains, which
// imports this one.
func openStore(tb testing.TB) *boltstore.DB {
	tb.Helper()
	db, err := boltstore.Open(filepath.Join(tb.TempDir(), "petstore.db"), store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}
