// DNS transport for Checker: finding a name's zone and nameservers, asking
// them (or the resolvers), following CNAMEs. The rules live in check.go.

package dnscheck

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// resolvers returns the configured resolvers with ports, or the system's.
func (c *Checker) resolvers() []string {
	var out []string
	for _, r := range c.Resolvers {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(r); err != nil {
			r = net.JoinHostPort(strings.Trim(r, "[]"), "53")
		}
		out = append(out, r)
	}
	if len(out) > 0 {
		return out
	}
	if conf, err := dns.ClientConfigFromFile("/etc/resolv.conf"); err == nil {
		for _, s := range conf.Servers {
			out = append(out, net.JoinHostPort(s, conf.Port))
		}
	}
	if len(out) == 0 {
		out = []string{"127.0.0.1:53"}
	}
	return out
}

// session holds what one Check learned about where to ask.
type session struct {
	c         *Checker
	resolvers []string
	timeout   time.Duration

	zone    string   // the zone holding the name, "" when not found
	auth    []string // addresses (host:port) of the zone's nameservers that answer
	nsNames []string

	// foundZone is the zone the resolvers named, kept even when its
	// nameservers may not be asked.
	foundZone string

	// fellBack: an in-zone question went to the resolvers, so the result is
	// not purely authoritative.
	fellBack atomic.Bool
	// maxTTL is the longest TTL among the answers, for Result.MaxTTL.
	maxTTL atomic.Uint32
}

// discover finds the zone of name and its reachable nameservers. Any failure
// leaves s.auth empty, which sends every question to the resolvers.
func (s *session) discover(ctx context.Context, name string) {
	reg := RegistrableDomain(name)
	zone := ""
	for cand := name; cand != ""; {
		r, _, err := s.exchange(ctx, s.resolvers, cand, dns.TypeSOA, false)
		if err != nil {
			return // resolvers that cannot answer SOA (or are down) will not answer for parents either
		}
		if zone = soaZone(r, cand); zone != "" {
			break
		}
		if cand == reg || reg == "" {
			return
		}
		_, cand, _ = strings.Cut(cand, ".")
	}
	if zone == "" {
		return
	}
	s.foundZone = zone

	r, _, err := s.exchange(ctx, s.resolvers, zone, dns.TypeNS, false)
	if err != nil {
		return
	}
	var hosts []string
	for _, rr := range ownedBy(r.Answer, zone, dns.TypeNS) {
		hosts = append(hosts, Canonical(rr.(*dns.NS).Ns))
	}
	if len(hosts) == 0 {
		return
	}
	slices.Sort(hosts)
	hosts = slices.Compact(hosts)

	port := "53"
	if s.c.NameserverPort > 0 {
		port = strconv.Itoa(s.c.NameserverPort)
	}
	// A few nameservers are plenty; resolving a dozen without glue, one after
	// the other, would cost more than the check.
	const maxHosts = 4
	lookup := hosts[:min(len(hosts), maxHosts)]
	found := make([][]netip.Addr, len(lookup))
	var wg sync.WaitGroup
	for i, h := range lookup {
		wg.Go(func() { found[i] = s.hostAddrs(ctx, h, r.Extra) })
	}
	wg.Wait()

	var ips []netip.Addr
	for _, ip := range slices.Concat(found...) {
		if s.c.AllowPrivateNameservers || publicAddr(ip) {
			ips = append(ips, ip)
		}
	}
	// IPv4 first: hosts without IPv6 would otherwise spend a timeout on every
	// question before reaching a server that works.
	slices.SortFunc(ips, netip.Addr.Compare)
	ips = slices.Compact(ips)
	const maxServers = 6
	var addrs []string
	for _, ip := range ips[:min(len(ips), maxServers)] {
		addrs = append(addrs, net.JoinHostPort(ip.String(), port))
	}
	if len(addrs) == 0 {
		return
	}

	// Probe once so that lame nameservers cost one timeout, not one per
	// question, and put the server that answered first.
	_, srv, err := s.exchange(ctx, addrs, zone, dns.TypeSOA, true)
	if err != nil {
		return
	}
	i := slices.Index(addrs, srv)
	addrs[0], addrs[i] = addrs[i], addrs[0]

	s.zone, s.auth, s.nsNames = zone, addrs, lookup
}

// hostAddrs returns a nameserver's addresses, from the glue in extra when
// present, else from the resolvers.
func (s *session) hostAddrs(ctx context.Context, host string, extra []dns.RR) []netip.Addr {
	var out []netip.Addr
	for _, rr := range ownAddrRecords(extra, host) {
		ip, _ := rrAddr(rr)
		out = append(out, ip)
	}
	if len(out) > 0 {
		return out
	}
	out, _ = s.lookupAddrs(ctx, host)
	return out
}

// lookupAddrs resolves host's A and AAAA records, CNAMEs followed; errs
// holds the failures of the two lookups.
func (s *session) lookupAddrs(ctx context.Context, host string) (addrs []netip.Addr, errs []error) {
	for _, t := range []uint16{dns.TypeA, dns.TypeAAAA} {
		rrs, err := s.rrset(ctx, host, t)
		errs = append(errs, err)
		for _, rr := range rrs {
			if ip, ok := rrAddr(rr); ok {
				addrs = append(addrs, ip)
			}
		}
	}
	return addrs, errs
}

// publicAddr reports whether ip may be a nameserver on the Internet: not
// loopback, private, link-local, unspecified or multicast.
func publicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsValid() && !ip.IsLoopback() && !ip.IsPrivate() && !ip.IsLinkLocalUnicast() &&
		!ip.IsLinkLocalMulticast() && !ip.IsUnspecified() && !ip.IsMulticast()
}

// soaZone returns the zone a SOA answer for cand reveals: cand when it
// owns a SOA, else the authority section's zone of a negative answer.
// Answers through an alias are ignored: their SOA is the target's zone.
func soaZone(r *dns.Msg, cand string) string {
	for _, rr := range r.Answer {
		switch rr := rr.(type) {
		case *dns.SOA:
			if Canonical(rr.Hdr.Name) == cand {
				return cand
			}
		case *dns.CNAME:
			if Canonical(rr.Hdr.Name) == cand {
				return ""
			}
		}
	}
	for _, rr := range r.Ns {
		if soa, ok := rr.(*dns.SOA); ok && isSubdomain(cand, Canonical(soa.Hdr.Name)) {
			return Canonical(soa.Hdr.Name)
		}
	}
	return ""
}

// isSubdomain reports whether name is zone or under it.
func isSubdomain(name, zone string) bool {
	return zone != "" && (name == zone || strings.HasSuffix(name, "."+zone))
}

// query asks one question: the zone's nameservers when the name is in their
// zone, else (or when they fail) the resolvers.
func (s *session) query(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	if len(s.auth) > 0 && isSubdomain(name, s.zone) {
		r, _, err := s.exchange(ctx, s.auth, name, qtype, true)
		if err == nil {
			s.noteTTLs(r)
			return r, nil
		}
		s.fellBack.Store(true)
	}
	r, _, err := s.exchange(ctx, s.resolvers, name, qtype, false)
	if err == nil {
		s.noteTTLs(r)
	}
	return r, err
}

func (s *session) noteTTLs(r *dns.Msg) {
	for _, rr := range r.Answer {
		for ttl := rr.Header().Ttl; ; {
			cur := s.maxTTL.Load()
			if ttl <= cur || s.maxTTL.CompareAndSwap(cur, ttl) {
				break
			}
		}
	}
}

// maxChain bounds CNAME chains, so that a loop ends.
const maxChain = 8

// errCNAMELoop is a chain that loops or passes maxChain: the servers
// answered, and only the records can fix it.
var errCNAMELoop = errors.New("CNAME records loop or chain too long")

// rrset resolves name/qtype, following CNAMEs, and returns the records of
// qtype at the chain's end.
func (s *session) rrset(ctx context.Context, name string, qtype uint16) ([]dns.RR, error) {
	cur := Canonical(name)
	seen := map[string]bool{cur: true}
	for range maxChain {
		r, err := s.query(ctx, cur, qtype)
		if err != nil {
			return nil, err
		}
		followed := false
		for t := cnameOf(r.Answer, cur); t != ""; t = cnameOf(r.Answer, cur) {
			if seen[t] || len(seen) > maxChain {
				return nil, &lookupError{name: name, qtype: qtype, err: errCNAMELoop}
			}
			seen[t] = true
			cur, followed = t, true
		}
		rrs := ownedBy(r.Answer, cur, qtype)
		// An authoritative server stops at an alias leaving its zone, and
		// some servers follow only one alias: ask for the target then.
		if len(rrs) > 0 || !followed || r.Rcode == dns.RcodeNameError {
			return rrs, nil
		}
	}
	return nil, &lookupError{name: name, qtype: qtype, err: errCNAMELoop}
}

func cnameOf(rrs []dns.RR, owner string) string {
	for _, rr := range rrs {
		if c, ok := rr.(*dns.CNAME); ok && Canonical(c.Hdr.Name) == owner {
			return Canonical(c.Target)
		}
	}
	return ""
}

func ownedBy(rrs []dns.RR, owner string, qtype uint16) []dns.RR {
	var out []dns.RR
	for _, rr := range rrs {
		if rr.Header().Rrtype == qtype && Canonical(rr.Header().Name) == owner {
			out = append(out, rr)
		}
	}
	return out
}

func rrAddr(rr dns.RR) (netip.Addr, bool) {
	var ip net.IP
	switch rr := rr.(type) {
	case *dns.A:
		ip = rr.A
	case *dns.AAAA:
		ip = rr.AAAA
	default:
		return netip.Addr{}, false
	}
	a, ok := netip.AddrFromSlice(ip)
	return a.Unmap(), ok
}

// lookupError is a DNS question that got no usable answer.
type lookupError struct {
	name  string
	qtype uint16
	err   error
}

func (e *lookupError) Error() string {
	return fmt.Sprintf("looking up %s %s: %v", e.name, dns.TypeToString[e.qtype], e.err)
}

func (e *lookupError) Unwrap() error { return e.err }

// rcodeError is a server's refusal or failure to answer.
type rcodeError struct {
	server string
	rcode  int
}

func (e *rcodeError) Error() string {
	return fmt.Sprintf("%s answered %s", e.server, dns.RcodeToString[e.rcode])
}

// exchange asks servers in turn until one answers NOERROR or NXDOMAIN, and
// returns the answer and server. Nameservers are asked with recursion off
// and must answer authoritatively; resolvers are asked to recurse.
func (s *session) exchange(ctx context.Context, servers []string, name string, qtype uint16, authoritative bool) (*dns.Msg, string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.RecursionDesired = !authoritative
	// 1232 bytes avoids IP fragmentation; bigger answers come back truncated
	// and are retried over TCP.
	m.SetEdns0(1232, false)

	var lastErr error = errors.New("no DNS server configured")
	for _, srv := range servers {
		if err := ctx.Err(); err != nil {
			return nil, "", &lookupError{name: name, qtype: qtype, err: err}
		}
		r, err := s.exchangeOne(ctx, m, srv, "udp")
		if err == nil && r.Truncated {
			r, err = s.exchangeOne(ctx, m, srv, "tcp")
		}
		switch {
		case err != nil:
			lastErr = err
		case r.Rcode != dns.RcodeSuccess && r.Rcode != dns.RcodeNameError:
			lastErr = &rcodeError{server: srv, rcode: r.Rcode}
		case authoritative && !r.Authoritative:
			lastErr = fmt.Errorf("%s is not authoritative for %s", srv, name)
		default:
			return r, srv, nil
		}
	}
	return nil, "", &lookupError{name: name, qtype: qtype, err: lastErr}
}

func (s *session) exchangeOne(ctx context.Context, m *dns.Msg, server, network string) (*dns.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	client := &dns.Client{Net: network, Timeout: s.timeout}
	conn, err := client.DialContext(ctx, server)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// miekg/dns honours the context's deadline but not its cancellation:
	// closing the connection makes a cancelled check return at once.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	r, _, err := client.ExchangeWithConnContext(ctx, m, conn)
	if err != nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return r, err
}

// answers asks several questions about name at once.
func (s *session) answers(ctx context.Context, name string, qtypes ...uint16) ([]dns.RR, []error) {
	msgs := make([]*dns.Msg, len(qtypes))
	errs := make([]error, len(qtypes))
	var wg sync.WaitGroup
	for i, t := range qtypes {
		wg.Go(func() { msgs[i], errs[i] = s.query(ctx, name, t) })
	}
	wg.Wait()
	var all []dns.RR
	for _, m := range msgs {
		if m != nil {
			all = append(all, m.Answer...)
		}
	}
	return all, errs
}
