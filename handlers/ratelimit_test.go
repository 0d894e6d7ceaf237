package handlers

import (
	"encoding/binary"
	"net/netip"
	"petstore/handlers/clientkey"
	"testing"
	"time"
)

// TestRateLimiterForgetsTheLeastRecentlyUsed: however many clients come,
// the limiter remembers at most its bound, and the one it forgets is the
// one seen least recently.
func TestRateLimiterForgetsTheLeastRecentlyUsed(t *testing.T) {
	const bound = 100
	l := newRateLimiter(1, 1, bound)
	now := time.Now()
	key := func(i int) clientkey.Key {
		var a [4]byte
		binary.BigEndian.PutUint32(a[:], uint32(i)+10<<24)
		return clientkey.Of(netip.AddrPortFrom(netip.AddrFrom4(a), 1).String())
	}
	// Client 0 empties its bucket, then stays the most recent as 60,000
	// others come and go: it is never forgotten, so it stays limited.
	if !l.allow(key(0), now) || l.allow(key(0), now) {
		t.Fatal("burst 1: want the first request allowed and the second refused")
	}
	for i := 1; i <= 60_000; i++ {
		if !l.allow(key(i), now) {
			t.Fatalf("client %d: its first request refused", i)
		}
		if i%10 == 0 && l.allow(key(0), now) {
			t.Fatalf("client 0 was forgotten after %d others although it was recent", i)
		}
		if n := l.clients.Len(); n > bound {
			t.Fatalf("after %d clients the limiter holds %d entries; bound %d", i, n, bound)
		}
	}
	// Client 1 was seen least recently of all: forgotten, so full again.
	if !l.allow(key(1), now) {
		t.Error("the least recently used client was not forgotten")
	}
}

func TestClientKeyGroupsIPv6By64(t *testing.T) {
	same := [][2]string{
		{"[2001:db8:1:2::1]:1000", "[2001:db8:1:2:ffff:ffff:ffff:ffff]:2000"},
		{"192.0.2.7:1", "[::ffff:192.0.2.7]:2"},
	}
	for _, p := range same {
		if clientkey.Of(p[0]) != clientkey.Of(p[1]) {
			t.Errorf("%s and %s: want one client", p[0], p[1])
		}
	}
	different := [][2]string{
		{"[2001:db8:1:2::1]:1000", "[2001:db8:1:3::1]:1000"},
		{"192.0.2.7:1", "192.0.2.8:1"},
		{"[::ffff:192.0.2.7]:2", "[::ffff:192.0.2.8]:2"},
	}
	for _, p := range different {
		if clientkey.Of(p[0]) == clientkey.Of(p[1]) {
			t.Errorf("%s and %s: want two clients", p[0], p[1])
		}
	}
}
