package handlers

import (
	"encoding/binary"
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"petstore/server/clientkey"
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

// TestFailureLimiterWindowAndBound: the 10th failure within a minute locks
// an address out until the oldest is a minute old; IPv6 addresses count by
// /64; and the table of addresses not locked out forgets the least recently
// failed past its size, so that many addresses cannot grow it without bound.
func TestFailureLimiterWindowAndBound(t *testing.T) {
	client := func(addr string) clientkey.Key { return clientkey.Of(addr + ":1") }
	l := newFailureLimiter(10)
	t0 := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	for i := range 9 {
		l.fail(client("192.0.2.1"), t0.Add(time.Duration(i)*time.Second))
	}
	if d := l.lockedFor(client("192.0.2.1"), t0.Add(9*time.Second)); d != 0 {
		t.Fatalf("locked after 9 failures: %v", d)
	}
	l.fail(client("192.0.2.1"), t0.Add(9*time.Second))
	if d := l.lockedFor(client("192.0.2.1"), t0.Add(10*time.Second)); d != 50*time.Second {
		t.Errorf("after 10 failures in 9 s: locked for %v, want 50s (until the first is a minute old)", d)
	}
	if d := l.lockedFor(client("192.0.2.1"), t0.Add(time.Minute)); d != 0 {
		t.Errorf("a minute after the first failure: still locked for %v", d)
	}
	if d := l.lockedFor(client("192.0.2.2"), t0); d != 0 {
		t.Errorf("another address is locked: %v", d)
	}

	// One /64: the failures of its addresses add up.
	v6 := newFailureLimiter(10)
	for i := range 10 {
		r := &http.Request{RemoteAddr: "[2001:db8:1:2::" + strconv.Itoa(i+1) + "]:443"}
		v6.fail(clientkey.Of(r.RemoteAddr), t0)
	}
	if v6.lockedFor(clientkey.Of("[2001:db8:1:2:ffff::1]:1"), t0) == 0 {
		t.Error("an address of the same /64 is not locked out")
	}
	if v6.lockedFor(clientkey.Of("[2001:db8:1:3::1]:1"), t0) != 0 {
		t.Error("an address of another /64 is locked out")
	}
	if clientkey.Of("[::ffff:192.0.2.9]:1") != client("192.0.2.9") {
		t.Error("an IPv4-mapped address does not count as its IPv4 address")
	}

	// Bounded: past its size, the table of addresses that failed but are
	// not locked out forgets the least recently failed.
	l2 := newFailureLimiter(10)
	for i := range 9 {
		l2.fail(client("192.0.2.1"), t0.Add(time.Duration(i)*time.Second))
	}
	for i := range failureWatchSize + 5 {
		l2.fail(client("10.0."+strconv.Itoa(i/256)+"."+strconv.Itoa(i%256)), t0.Add(10*time.Second))
	}
	if n := l2.watching.Len(); n != failureWatchSize {
		t.Errorf("%d addresses remembered, want %d", n, failureWatchSize)
	}
	if _, ok := l2.watching.Peek(client("192.0.2.1")); ok {
		t.Error("the least recently failed address is still remembered")
	}
}

// TestFailureLimiterKeepsLockOuts: failures from 12,000 other addresses,
// once each or ten times each, do not push a locked-out address out of the
// limiter: it stays locked until its minute passes, and then it is
// forgotten.
func TestFailureLimiterKeepsLockOuts(t *testing.T) {
	client := func(i int) clientkey.Key {
		return clientkey.Of("10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255) + ":1")
	}
	victim := clientkey.Of("192.0.2.1:1")
	l := newFailureLimiter(10)
	t0 := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	for range 10 {
		l.fail(victim, t0)
	}
	for _, times := range []int{1, 10} {
		for i := range 12_000 {
			for range times {
				l.fail(client(i), t0.Add(time.Second))
			}
		}
		if d := l.lockedFor(victim, t0.Add(2*time.Second)); d != 58*time.Second {
			t.Fatalf("after 12,000 other addresses failed %d times each: the locked-out address is locked for %v, want 58s", times, d)
		}
	}
	if d := l.lockedFor(client(11_999), t0.Add(2*time.Second)); d != 59*time.Second {
		t.Errorf("an address that failed ten times: locked for %v, want 59s", d)
	}
	if d := l.lockedFor(victim, t0.Add(time.Minute)); d != 0 {
		t.Errorf("a minute after its failures: still locked for %v", d)
	}
	if _, ok := l.locked.Peek(victim); ok {
		t.Error("an address whose failures are all a minute old is still in the table")
	}
}

// allow is take's verdict alone.
func (l *rateLimiter) allow(k clientkey.Key, now time.Time) bool {
	ok, _, _ := l.take(k, now)
	return ok
}
