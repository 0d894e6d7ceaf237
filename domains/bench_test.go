package domains

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"petstore/domains/dnscheck"
	"petstore/store"
	"petstore/store/boltstore"
)

// benchManager is a manager over a store with n verified domains
// d0.example.com ...
func benchManager(b *testing.B, n int, extra ...string) *Manager {
	b.Helper()
	db, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	ctx := context.Background()
	names := extra
	for i := range n {
		names = append(names, fmt.Sprintf("d%d.example.com", i))
	}
	for _, name := range names {
		d := store.Domain{Name: name, State: store.DomainVerified}
		if err := db.AddDomain(ctx, &d, nil); err != nil {
			b.Fatal(err)
		}
	}
	cfg := Config{Store: db, Platform: dnscheck.Platform{Domain: "petstore.test"}, Checker: &dnscheck.Checker{}}
	m, err := NewManager(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(m.Close)
	return m
}

// BenchmarkRoute is the host-routing decision that every request pays,
// with 1 and 1,000 attached domains: it must not grow with their number.
func BenchmarkRoute(b *testing.B) {
	for _, n := range []int{1, 1000} {
		m := benchManager(b, n)
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

// BenchmarkRouteWildcard is the same decision with a verified wildcard
// among 1,000 domains: a name it covers, an exact name beside it, and an
// unknown name two labels below it, which misses both.
func BenchmarkRouteWildcard(b *testing.B) {
	m := benchManager(b, 1000, "*.shop.example.com", "api.shop.example.com")
	for _, host := range []string{"a.shop.example.com", "api.shop.example.com", "x.y.shop.example.com", "unknown.example.net"} {
		b.Run("host="+host, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if (m.Route(host).Decision == Unknown) != (host == "x.y.shop.example.com" || host == "unknown.example.net") {
					b.Fatal("wrong decision")
				}
			}
		})
	}
}
