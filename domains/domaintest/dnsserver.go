package domaintest

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"

	"petstore/domains/acmedns"
)

// DNSServer is a test's own loopback DNS server answering from records the
// test sets, as a resolver (StartFaultyDNS, StartResolver, NewZone with no
// zone) or a zone's authoritative server (NewZone). Unlike challtestsrv it
// answers NXDOMAIN and can fail every n-th query.
type DNSServer struct {
	addr     string
	auth     string // authoritative for this zone (FQDN); "" plays a resolver
	forward  string // the delegated zone (FQDN), whose questions go upstream
	upstream string // the delegated zone's server, host:port

	mu      sync.Mutex
	records map[string][]dns.RR // by lower-case FQDN
	seen    []string            // every query, "name type rd|nord"
	asked   []string            // "name type" forwarded upstream
	fault   Fault
	every   int // fail the queries whose number is a multiple of every
	queries int
	faulted int
}

// Fault is how a DNSServer misbehaves on a query it is told to fail.
type Fault int

// The faults a real DNS server shows in an incident.
const (
	NoFault  Fault = iota // answers from the records
	ServFail              // answers SERVFAIL
	Refused               // answers REFUSED
	Drop                  // sends no answer, so the client times out
	// Truncate answers with TC and no records; StartFaultyDNS has no TCP
	// listener, so the client's TCP retry fails.
	Truncate
)

// StartFaultyDNS starts a resolver on loopback UDP, with no records yet,
// stopped when tb's test ends.
func StartFaultyDNS(tb testing.TB) *DNSServer {
	tb.Helper()
	return startDNSServer(tb, &DNSServer{}, false)
}

// StartResolver starts a loopback resolver sending zone's questions to
// upstream and following CNAMEs into zone; it stops with tb's test.
func StartResolver(tb testing.TB, zone, upstream string) (*DNSServer, string) {
	tb.Helper()
	s := startDNSServer(tb, &DNSServer{forward: fqdn(zone), upstream: upstream}, true)
	return s, s.addr
}

// NewZone starts, on loopback UDP, zone's authoritative server with
// records, or a resolver with its own view of the world when zone is "".
func NewZone(tb testing.TB, zone string, records ...string) (*DNSServer, string) {
	tb.Helper()
	s := startDNSServer(tb, &DNSServer{auth: strings.ToLower(zone)}, false)
	s.Set(tb, records...)
	return s, s.addr
}

func startDNSServer(tb testing.TB, s *DNSServer, tcp bool) *DNSServer {
	tb.Helper()
	s.records = map[string][]dns.RR{}
	s.addr = ServeDNS(tb, s, tcp)
	return s
}

// ServeDNS serves h on a free loopback UDP port, with tcp on the same TCP
// port too, until tb's test ends; it returns host:port once served.
func ServeDNS(tb testing.TB, h dns.Handler, tcp bool) string {
	tb.Helper()
	pc, ln := listenDNS(tb, tcp)
	servers := []*dns.Server{{PacketConn: pc, Handler: h}}
	if ln != nil {
		servers = append(servers, &dns.Server{Listener: ln, Handler: h})
	}
	for _, srv := range servers {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go func() { _ = srv.ActivateAndServe() }()
		<-started
		tb.Cleanup(func() { _ = srv.Shutdown() })
	}
	return pc.LocalAddr().String()
}

// listenDNS listens on a free loopback UDP port and, with tcp, on the same
// TCP port.
func listenDNS(tb testing.TB, tcp bool) (pc net.PacketConn, ln net.Listener) {
	tb.Helper()
	var err error
	if tcp {
		pc, ln, err = acmedns.Listen("127.0.0.1:0")
	} else {
		pc, err = net.ListenPacket("udp", "127.0.0.1:0")
	}
	if err != nil {
		tb.Fatalf("domaintest: %v", err)
	}
	return pc, ln
}

// Addr returns the server's address, host:port.
func (s *DNSServer) Addr() string { return s.addr }

// Set replaces every record of the records' names, in zone-file form
// ("shop.customer.test. 0 IN CNAME elsewhere.test.").
func (s *DNSServer) Set(tb testing.TB, records ...string) {
	tb.Helper()
	set := map[string][]dns.RR{}
	for _, r := range records {
		rr, err := dns.NewRR(r)
		if err != nil || rr == nil {
			tb.Fatalf("domaintest: record %q: %v", r, err)
		}
		name := strings.ToLower(rr.Header().Name)
		set[name] = append(set[name], rr)
	}
	s.mu.Lock()
	maps.Copy(s.records, set)
	s.mu.Unlock()
}

// SetCNAME makes name an alias of target, replacing its records.
func (s *DNSServer) SetCNAME(tb testing.TB, name, target string) {
	tb.Helper()
	s.Set(tb, fqdn(name)+" 60 IN CNAME "+dns.Fqdn(target))
}

// Clear removes every record of name: it answers NXDOMAIN.
func (s *DNSServer) Clear(name string) {
	s.mu.Lock()
	delete(s.records, fqdn(name))
	s.mu.Unlock()
}

// SetFault makes every n-th query from now on fail with fault (n = 1:
// every one); NoFault or n < 1 heals it.
func (s *DNSServer) SetFault(fault Fault, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault, s.every, s.queries = fault, n, 0
	if n < 1 {
		s.fault = NoFault
	}
}

// Faulted returns how many queries got a fault in place of an answer.
func (s *DNSServer) Faulted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faulted
}

// Seen lists the queries asked, as "name type rd" or "name type nord".
func (s *DNSServer) Seen() []string { return s.snapshot(&s.seen) }

// Asked lists the questions sent to the delegated zone's server, "name type".
func (s *DNSServer) Asked() []string { return s.snapshot(&s.asked) }

func (s *DNSServer) snapshot(list *[]string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(*list)
}

// ServeDNS answers one query.
func (s *DNSServer) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.RecursionAvailable = s.auth == ""
	if len(req.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		_ = w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	s.mu.Lock()
	s.seen = append(s.seen, strings.ToLower(q.Name)+" "+dns.TypeToString[q.Qtype]+map[bool]string{true: " rd", false: " nord"}[req.RecursionDesired])
	fault := NoFault
	if s.fault != NoFault {
		s.queries++
		if s.queries%s.every == 0 {
			fault = s.fault
			s.faulted++
		}
	}
	s.mu.Unlock()

	switch fault {
	case ServFail:
		m.Rcode = dns.RcodeServerFailure
	case Refused:
		m.Rcode = dns.RcodeRefused
	case Drop:
		return
	case Truncate:
		m.Truncated = true
	default:
		s.answer(m, q)
	}
	_ = w.WriteMsg(m)
}

// answer fills m with the answer to q, following aliases as a resolver
// would, or only within its zone as the zone's server does.
func (s *DNSServer) answer(m *dns.Msg, q dns.Question) {
	name := strings.ToLower(q.Name)
	if s.auth != "" {
		if !dns.IsSubDomain(s.auth, name) {
			m.Rcode = dns.RcodeRefused
			return
		}
		m.Authoritative = true
	}
	for hops := 0; hops < 8; hops++ {
		if s.forward != "" && dns.IsSubDomain(s.forward, name) {
			up, err := s.ask(name, q.Qtype)
			if err != nil {
				m.Rcode = dns.RcodeServerFailure
			} else if m.Answer = append(m.Answer, up.Answer...); len(m.Answer) == 0 {
				m.Rcode = up.Rcode
			}
			return
		}
		s.mu.Lock()
		rrs := slices.Clone(s.records[name])
		if _, parent, ok := strings.Cut(name, "."); ok && len(rrs) == 0 {
			// RFC 4592: a wildcard answers for a name without records of its own.
			for _, rr := range s.records["*."+parent] {
				rr = dns.Copy(rr)
				rr.Header().Name = name
				rrs = append(rrs, rr)
			}
		}
		s.mu.Unlock()
		if len(rrs) == 0 {
			if len(m.Answer) == 0 {
				m.Rcode = dns.RcodeNameError
			}
			break
		}
		next := ""
		for _, rr := range rrs {
			switch {
			case rr.Header().Rrtype == q.Qtype:
				m.Answer = append(m.Answer, rr)
			case rr.Header().Rrtype == dns.TypeCNAME:
				m.Answer = append(m.Answer, rr)
				next = strings.ToLower(rr.(*dns.CNAME).Target)
			}
		}
		// A zone's server follows aliases only inside its zone.
		if name = next; name == "" || (s.auth != "" && !dns.IsSubDomain(s.auth, name)) {
			break
		}
	}
	if len(m.Answer) == 0 {
		s.mu.Lock()
		for _, rrs := range s.records {
			for _, rr := range rrs {
				if soa, ok := rr.(*dns.SOA); ok && dns.IsSubDomain(soa.Hdr.Name, strings.ToLower(q.Name)) {
					m.Ns = append(m.Ns, soa)
				}
			}
		}
		s.mu.Unlock()
	}
}

// ask asks the delegated zone's server, over TCP when the UDP answer is cut.
func (s *DNSServer) ask(name string, qtype uint16) (*dns.Msg, error) {
	s.mu.Lock()
	s.asked = append(s.asked, strings.TrimSuffix(name, ".")+" "+dns.TypeToString[qtype])
	s.mu.Unlock()
	resp, err := exchange("udp", s.upstream, name, qtype)
	if err == nil && resp.Truncated {
		resp, err = exchange("tcp", s.upstream, name, qtype)
	}
	return resp, err
}

// exchange asks addr one question over network, recursion off.
func exchange(network, addr, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = false
	resp, _, err := (&dns.Client{Net: network}).Exchange(m, addr)
	return resp, err
}

// DelegatedZone starts the nameserver of shop.deleg.test, a delegated
// subdomain whose apex has apexAddr, and a resolver knowing the
// delegation. The nameserver is on loopback: checkers must allow private
// nameservers and ask on nameserverPort.
func DelegatedZone(t testing.TB, apexAddr string) (auth *DNSServer, resolverAddr string, nameserverPort int) {
	t.Helper()
	known := []string{
		"shop.deleg.test. 3600 IN SOA ns1.shop.deleg.test. hostmaster.shop.deleg.test. 1 3600 600 86400 60",
		"shop.deleg.test. 3600 IN NS ns1.shop.deleg.test.",
		"ns1.shop.deleg.test. 3600 IN A 127.0.0.1",
	}
	auth, authAddr := NewZone(t, "shop.deleg.test.", append(known, "shop.deleg.test. 3600 IN A "+apexAddr)...)
	_, resolverAddr = NewZone(t, "", known...)
	_, port, _ := net.SplitHostPort(authAddr)
	nameserverPort, _ = strconv.Atoi(port)
	return auth, resolverAddr, nameserverPort
}
