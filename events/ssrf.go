package events

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// refused says why an address may not receive webhooks ("" when it may),
// so that a webhook cannot reach what only the service can, directly or
// through a tunnel or translator.
func refused(ip netip.Addr) string {
	// Mapped addresses are dialled as IPv4; a zone would make no prefix
	// contain the address.
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() {
		return "not an IP address"
	}
	for _, r := range notGlobal {
		if r.prefix.Contains(ip) {
			return r.why
		}
	}
	return ""
}

// notGlobal are the destinations refused: IANA Special-Purpose Address
// Registry entries (RFC 6890) not globally reachable, multicast, obsolete
// blocks, and prefixes embedding an IPv4 address a translator or relay
// would reach (NAT64, 6to4, Teredo); the few reachable entries inside
// refused blocks are no webhook receivers. The first match names the
// reason, so narrower entries come first.
var notGlobal = []struct {
	prefix netip.Prefix
	why    string
}{
	// IPv4
	{netip.MustParsePrefix("0.0.0.0/32"), "the unspecified address"},
	{netip.MustParsePrefix("0.0.0.0/8"), `a reserved address ("this network")`},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a reserved address (shared, carrier-grade NAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "a reserved address (IETF protocol assignments)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a reserved address (documentation)"},
	{netip.MustParsePrefix("192.88.99.0/24"), "a reserved address (6to4 relay anycast, deprecated)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a reserved address (benchmarking)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a reserved address (documentation)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a reserved address (documentation)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"}, // and 255.255.255.255, broadcast
	// IPv6
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("::/128"), "the unspecified address"},
	{netip.MustParsePrefix("::/96"), "a reserved address (IPv4-compatible, deprecated)"},
	{netip.MustParsePrefix("64:ff9b::/96"), "a reserved address (NAT64, IPv4 translation)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a reserved address (local IPv4 translation)"},
	{netip.MustParsePrefix("100::/64"), "a reserved address (discard-only)"},
	{netip.MustParsePrefix("100:0:0:1::/64"), "a reserved address (dummy prefix)"},
	{netip.MustParsePrefix("2001::/32"), "a reserved address (Teredo)"},
	{netip.MustParsePrefix("2001::/23"), "a reserved address (IETF protocol assignments)"},
	{netip.MustParsePrefix("2001:db8::/32"), "a reserved address (documentation)"},
	{netip.MustParsePrefix("2002::/16"), "a reserved address (6to4)"},
	{netip.MustParsePrefix("3fff::/20"), "a reserved address (documentation)"},
	{netip.MustParsePrefix("5f00::/16"), "a reserved address (segment routing)"},
	{netip.MustParsePrefix("fc00::/7"), "a private address (unique local)"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("fec0::/10"), "a reserved address (site-local, deprecated)"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
}

// Policy is who may receive webhooks: AllowPrivate lifts the address rule
// (--webhook-allow-private); AllowLoopback lifts it for loopback alone
// (development mode), other private ranges staying refused.
type Policy struct {
	AllowPrivate  bool
	AllowLoopback bool
	// Resolver looks names up when a URL is saved; nil is the system's.
	Resolver *net.Resolver
}

// CheckURL judges a webhook URL when saved: http or https, a host, and
// (unless AllowPrivate) a name resolving only to public addresses. The
// rule runs again on the address dialled (control), so that a name whose
// answer changes later is refused then.
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
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("the URL's port %s is not a port (1 to 65535)", p)
		}
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
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := p.Resolver.LookupNetIP(ctx, "ip", host) // a nil *net.Resolver is the system's
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

// refused is the package's refused, loopback allowed when the policy says.
func (p Policy) refused(ip netip.Addr) string {
	if p.AllowLoopback && ip.Unmap().IsLoopback() {
		return ""
	}
	return refused(ip)
}

// control refuses, at connect time, the resolved address the dialer is
// about to use when the policy refuses it.
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
