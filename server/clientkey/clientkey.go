// Package clientkey decides which client a peer address belongs to, for
// every per-client limit (connections, requests, failed credentials).
package clientkey

import (
	"net"
	"net/netip"
)

// Key identifies a client: an IPv4 address, or an IPv6 address's /64,
// since one host usually has a whole /64 to pick source addresses from.
type Key [16]byte

// Of is the client of a peer address ("ip:port"); what does not parse
// (tests, in-process callers) is the zero key, one shared client. It runs
// on every request, so the port, which no key uses, is not parsed.
func Of(remoteAddr string) Key {
	host, _, err := net.SplitHostPort(remoteAddr)
	a, aerr := netip.ParseAddr(host)
	if err != nil || aerr != nil {
		return Key{}
	}
	a = a.Unmap()
	k := Key(a.As16())
	if a.Is6() {
		clear(k[8:])
	}
	return k
}
