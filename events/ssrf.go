package events

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// refused says why an address may not receive webhooks, or "" when it may.
// Destinations inside the service's own network (loopback, private,
// link-local, multicast, unspecified) are refused so that a webhook cannot
// make the service reach what only it can reach.
func refused(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsPrivate():
		return "a private address"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "a link-local address"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "a multicast address"
	case ip.IsUnspecified():
		return "the unspecified address"
	case isSharedOrReserved(ip):
		return "a reserved address"
	}
	return ""
}

// reservedPrefixes are further ranges no public receiver lives in:
// carrier-grade NAT, the benchmark nets, and IPv4's reserved block.
var reservedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("0.0.0.0/8"),
}

func isSharedOrReserved(ip netip.Addr) bool {
	for _, p := range reservedPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Policy is who may receive webhooks: AllowPrivate lifts the address
// rule (--webhook-allow-private), for tests and internal receivers;
// AllowLoopback lifts it for loopback addresses alone (development mode,
// where the receiver runs on the developer's machine), every other
// private range staying refused.
type Policy struct {
	AllowPrivate  bool
	AllowLoopback bool
	// Resolver looks names up when a URL is saved; nil is the system's.
	Resolver *net.Resolver
}

// CheckURL judges a webhook URL when it is saved: http or https, a host,
// and (unless AllowPrivate) a name that resolves only to public
// addresses. The same rule runs again at connect time (control), on the
// address actually dialled, so that a name that changes its answer
// later is refused then.
func (p Policy) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return fmt.Errorf("%q is not an absolute URL", raw)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("the URL's scheme is %q: webhooks are sent over http or https only", u.Scheme)
	}
	if u.User != nil {
		return fmt.Errorf("the URL carries a user name or password: put a credential in the path or query instead")
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("the URL %q has no host", raw)
	}
	if p.AllowPrivate {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if why := p.refused(ip); why != "" {
			return fmt.Errorf("%s is %s: webhooks go to public addresses only (--webhook-allow-private allows others)", host, why)
		}
		return nil
	}
	if (strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost")) && !p.AllowLoopback {
		return fmt.Errorf("%s is a loopback name: webhooks go to public addresses only (--webhook-allow-private allows others)", host)
	}
	r := p.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("the name %s does not resolve: %v", host, err)
	}
	for _, a := range addrs {
		if why := p.refused(a); why != "" {
			return fmt.Errorf("%s resolves to %s, %s: webhooks go to public addresses only (--webhook-allow-private allows others)", host, a.Unmap(), why)
		}
	}
	return nil
}

// refused is the package's refused, with loopback addresses allowed when
// the policy allows them.
func (p Policy) refused(ip netip.Addr) string {
	if p.AllowLoopback && ip.Unmap().IsLoopback() {
		return ""
	}
	return refused(ip)
}

// control refuses, at connect time, a connection to an address the policy
// refuses: it sees the resolved address the dialer is about to use.
func (p Policy) control(_, address string, _ syscall.RawConn) error {
	if p.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhooks: cannot judge the address %s: %w", address, err)
	}
	if why := p.refused(ap.Addr()); why != "" {
		return fmt.Errorf("the receiver's address %s is %s: webhooks go to public addresses only (--webhook-allow-private allows others)", ap.Addr().Unmap(), why)
	}
	return nil
}
