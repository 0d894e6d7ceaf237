package handlers

import (
	"encoding/binary"
	"net/netip"
	"petstore/server/clientkey"
	"testing"
	"time"
)

// BenchmarkRateLimiter is the limiter's cost on the request path: one
// decision for a client among 1,000 that come and go, from parallel
// goroutines (the limiter's lock is shared). Issue 20 asked for a library
// unless a hand-written limiter is at least 20% faster here; the figures of
// both are in docs/performance.md.
func BenchmarkRateLimiter(b *testing.B) {
	l := newRateLimiter(1e9, 2e9, rateLimitClients)
	keys := make([]clientkey.Key, 1000)
	for i := range keys {
		var a [4]byte
		binary.BigEndian.PutUint32(a[:], uint32(i)+10<<24)
		keys[i] = clientkey.Of(netip.AddrPortFrom(netip.AddrFrom4(a), 1).String())
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.allow(keys[i%len(keys)], time.Now())
			i++
		}
	})
}
