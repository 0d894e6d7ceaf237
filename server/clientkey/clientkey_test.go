package clientkey_test

import (
	"net/netip"
	"testing"

	"petstore/server/clientkey"
)

// TestOf: an IPv4 client is its address (mapped or not), an IPv6 client
// its /64, and what is not "ip:port" the zero key.
func TestOf(t *testing.T) {
	key := func(ip string) clientkey.Key { return clientkey.Key(netip.MustParseAddr(ip).As16()) }
	for addr, want := range map[string]clientkey.Key{
		"192.0.2.1:1234":             key("192.0.2.1"),
		"[::ffff:192.0.2.1]:80":      key("192.0.2.1"),
		"[2001:db8:1:2:3:4:5:6]:443": key("2001:db8:1:2::"),
		"[2001:db8:1:2:ffff::1]:1":   key("2001:db8:1:2::"),
		"[2001:db8:1:3::1]:1":        key("2001:db8:1:3::"),
		"[fe80::1%eth0]:80":          key("fe80::"),
		"":                           {},
		"pipe":                       {},
		"192.0.2.1":                  {},
		"2001:db8::1":                {},
		"example.com:80":             {},
	} {
		if got := clientkey.Of(addr); got != want {
			t.Errorf("Of(%q) = %v, want %v", addr, netip.AddrFrom16(got), netip.AddrFrom16(want))
		}
	}
}
