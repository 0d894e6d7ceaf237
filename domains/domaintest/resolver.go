package domaintest

import (
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Resolver is a recursive resolver of a test's own, for pebble and the
// checker: it answers the customers' names from records the test sets and
// changes, and asks the service's own DNS server for every name in the
// delegated zone, following a CNAME into that zone as a real resolver
// would (the _acme-challenge delegation). Unknown names are NXDOMAIN.
type Resolver struct {
	mu       sync.Mutex
	records  map[string][]dns.RR // by lower-case FQDN
	zone     string              // the delegated zone, FQDN
	upstream string              // its server, host:port
	asked    []string            // "name type" forwarded upstream
}

// StartResolver starts a resolver on loopback (UDP and TCP) that sends the
// questions of zone to upstream; it stops when tb's test ends.
func StartResolver(tb testing.TB, zone, upstream string) (*Resolver, string) {
	tb.Helper()
	r := &Resolver{records: map[string][]dns.RR{}, zone: dns.Fqdn(strings.ToLower(zone)), upstream: upstream}
	return r, serveBoth(tb, r)
}

// serveBoth serves h over UDP and TCP on one loopback port (pebble asks
// over TCP, the checker over UDP), until tb's test ends.
func serveBoth(tb testing.TB, h dns.Handler) string {
	tb.Helper()
	for i := 0; ; i++ {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("domaintest: %v", err)
		}
		ln, err := net.Listen("tcp", pc.LocalAddr().String())
		if err != nil {
			pc.Close()
			if i < 20 {
				continue // the TCP twin is someone else's
			}
			tb.Fatalf("domaintest: %v", err)
		}
		serve(tb, &dns.Server{PacketConn: pc, Handler: h})
		serve(tb, &dns.Server{Listener: ln, Handler: h})
		return pc.LocalAddr().String()
	}
}

// SetUpstream changes the server asked for the delegated zone.
func (r *Resolver) SetUpstream(addr string) {
	r.mu.Lock()
	r.upstream = addr
	r.mu.Unlock()
}

// Set replaces every record of the name of the records given (all of one
// name), given in zone-file form such as "shop.customer.test. 0 IN CNAME
// elsewhere.test.".
func (r *Resolver) Set(tb testing.TB, records ...string) {
	tb.Helper()
	var rrs []dns.RR
	for _, s := range records {
		rr, err := dns.NewRR(s)
		if err != nil {
			tb.Fatalf("domaintest: record %q: %v", s, err)
		}
		rrs = append(rrs, rr)
	}
	if len(rrs) == 0 {
		tb.Fatal("domaintest: Resolver.Set needs a record")
	}
	name := strings.ToLower(rrs[0].Header().Name)
	r.mu.Lock()
	r.records[name] = rrs
	r.mu.Unlock()
}

// Clear removes every record of name.
func (r *Resolver) Clear(name string) {
	r.mu.Lock()
	delete(r.records, dns.Fqdn(strings.ToLower(name)))
	r.mu.Unlock()
}

// Asked lists the questions sent to the zone's server, "name type".
func (r *Resolver) Asked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.asked)
}

// ServeDNS answers one question.
func (r *Resolver) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	m, q, ok := recursiveReply(w, req)
	if !ok {
		return
	}
	name := strings.ToLower(q.Name)
	for hops := 0; hops < 8; hops++ {
		if dns.IsSubDomain(r.zone, name) {
			up, err := r.forward(name, q.Qtype)
			if err != nil {
				m.Rcode = dns.RcodeServerFailure
			} else {
				m.Answer = append(m.Answer, up.Answer...)
				if len(m.Answer) == 0 {
					m.Rcode = up.Rcode
				}
			}
			break
		}
		r.mu.Lock()
		rrs := slices.Clone(r.records[name])
		if _, parent, ok := strings.Cut(name, "."); ok && len(rrs) == 0 {
			// RFC 4592: a wildcard answers for a name that has no records
			// of its own, under the name asked.
			for _, rr := range r.records["*."+parent] {
				rr = dns.Copy(rr)
				rr.Header().Name = name
				rrs = append(rrs, rr)
			}
		}
		r.mu.Unlock()
		if len(rrs) == 0 {
			if len(m.Answer) == 0 {
				m.Rcode = dns.RcodeNameError
			}
			break
		}
		target := appendAnswers(m, q.Qtype, rrs)
		if target == "" || q.Qtype == dns.TypeCNAME {
			break
		}
		name = target
	}
	_ = w.WriteMsg(m)
}

// forward asks the zone's server, over TCP when the UDP answer is cut.
func (r *Resolver) forward(name string, qtype uint16) (*dns.Msg, error) {
	r.mu.Lock()
	upstream := r.upstream
	r.asked = append(r.asked, strings.TrimSuffix(name, ".")+" "+dns.TypeToString[qtype])
	r.mu.Unlock()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = false
	c := &dns.Client{Timeout: 2 * time.Second}
	resp, _, err := c.Exchange(m, upstream)
	if err == nil && resp.Truncated {
		c.Net = "tcp"
		resp, _, err = c.Exchange(m, upstream)
	}
	return resp, err
}

// recursiveReply starts a test resolver's answer to req. When req does not
// ask exactly one question it answers FORMERR itself and ok is false.
func recursiveReply(w dns.ResponseWriter, req *dns.Msg) (m *dns.Msg, q dns.Question, ok bool) {
	m = new(dns.Msg)
	m.SetReply(req)
	m.RecursionAvailable = true
	if len(req.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		_ = w.WriteMsg(m)
		return nil, dns.Question{}, false
	}
	return m, req.Question[0], true
}

// appendAnswers appends to m the records of rrs of type qtype and the
// CNAME among them, and returns that CNAME's target ("" when there is
// none), where a resolver goes on.
func appendAnswers(m *dns.Msg, qtype uint16, rrs []dns.RR) (cname string) {
	for _, rr := range rrs {
		switch {
		case rr.Header().Rrtype == qtype:
			m.Answer = append(m.Answer, rr)
		case rr.Header().Rrtype == dns.TypeCNAME:
			m.Answer = append(m.Answer, rr)
			cname = strings.ToLower(rr.(*dns.CNAME).Target)
		}
	}
	return cname
}
