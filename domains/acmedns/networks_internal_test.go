package acmedns

import (
	"net"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"petstore/store"
	"petstore/store/boltstore"
)

// The limits are kept for maxNetworks networks. While the least recently
// seen one is still limited, a new network gets no answer rather than
// push it out; once its allowance is whole, a new network takes its place
// and the networks seen since keep theirs.
func TestNetworkLimitsForgetOnlyAWholeAllowance(t *testing.T) {
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "petstore.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s, err := New(Config{Zone: "acme.plat.test", Store: db, Rate: 1, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	network := func(i int) net.Addr { // a /24 each
		return &net.UDPAddr{IP: net.IPv4(byte(10+i>>16), byte(i>>8), byte(i), 1)}
	}
	now := time.Now()
	for i := range maxNetworks {
		if !s.allow(network(i), now) {
			t.Fatalf("network %d: its first question refused", i)
		}
	}
	if s.allow(network(maxNetworks), now) {
		t.Error("a new network was answered while every network known was still limited")
	}
	if s.allow(network(0), now) {
		t.Error("the least recently seen network was forgotten while still limited")
	}
	// Network 0 was just seen; network 1 is now the least recently seen.
	later := now.Add(time.Second) // every allowance whole again
	if !s.allow(network(maxNetworks), later) {
		t.Error("a new network was refused although the oldest one's allowance was whole")
	}
	if s.limiters.Contains(mustNetwork(t, network(1))) {
		t.Error("the least recently seen network is still kept")
	}
	if !s.limiters.Contains(mustNetwork(t, network(0))) {
		t.Error("a network seen since was forgotten")
	}
	if n := s.limiters.Len(); n != maxNetworks {
		t.Errorf("%d networks kept, want %d", n, maxNetworks)
	}
}

func mustNetwork(t *testing.T, addr net.Addr) netip.Prefix {
	t.Helper()
	n, ok := sourceNetwork(addr)
	if !ok {
		t.Fatalf("no network for %v", addr)
	}
	return n
}
