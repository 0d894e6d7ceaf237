package handlers

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestFailureLimiterWindowAndBound: the 10th failure within a minute locks
// an address out until the oldest is a minute old; IPv6 addresses count by
// /64; and the limiter forgets the least recently failed address past its
// size, so that many addresses cannot grow it without bound.
func TestFailureLimiterWindowAndBound(t *testing.T) {
	client := func(addr string) clientKey { return clientKeyOf(addr + ":1") }
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

	// One /64: the failures of its addresses add up. (check reads the
	// clock.)
	v6 := newFailureLimiter(10)
	for i := range 10 {
		r := &http.Request{RemoteAddr: "[2001:db8:1:2::" + strconv.Itoa(i+1) + "]:443"}
		v6.fail(clientKeyOf(r.RemoteAddr), time.Now())
	}
	if v6.check(&http.Request{RemoteAddr: "[2001:db8:1:2:ffff::1]:1"}) == nil {
		t.Error("an address of the same /64 is not locked out")
	}
	if v6.check(&http.Request{RemoteAddr: "[2001:db8:1:3::1]:1"}) != nil {
		t.Error("an address of another /64 is locked out")
	}
	if clientKeyOf("[::ffff:192.0.2.9]:1") != client("192.0.2.9") {
		t.Error("an IPv4-mapped address does not count as its IPv4 address")
	}

	// Bounded: past the size, the least recently failed is forgotten.
	for i := range failureLimiterSize + 5 {
		l.fail(client("10.0."+strconv.Itoa(i/256)+"."+strconv.Itoa(i%256)), t0)
	}
	if n := l.byClient.order.Len(); n != failureLimiterSize || len(l.byClient.items) != failureLimiterSize {
		t.Errorf("%d addresses remembered (%d in the map), want %d", n, len(l.byClient.items), failureLimiterSize)
	}
	if _, ok := l.byClient.peek(client("192.0.2.1")); ok {
		t.Error("the least recently failed address is still remembered")
	}
}
