package domaintest

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// Zone is a small real DNS server answering from a list of records,
// either as a zone's authoritative server (AA set, REFUSED outside its zone)
// or as a resolver with its own (possibly stale) view of the world.
type Zone struct {
	zone    string // authoritative for this zone; "" plays a resolver
	records []dns.RR

	mu      sync.Mutex
	queries []string // "name type rd=bool"
}

func NewZone(t testing.TB, zone string, records ...string) (*Zone, string) {
	t.Helper()
	z := &Zone{zone: zone}
	for _, s := range records {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatalf("record %q: %v", s, err)
		}
		z.records = append(z.records, rr)
	}
	return z, ServeDNS(t, z)
}

func (z *Zone) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	q := req.Question[0]
	name := strings.ToLower(q.Name)
	z.mu.Lock()
	z.queries = append(z.queries, name+" "+dns.TypeToString[q.Qtype]+map[bool]string{true: " rd", false: " nord"}[req.RecursionDesired])
	z.mu.Unlock()

	m := new(dns.Msg)
	m.SetReply(req)
	if z.zone != "" {
		if !dns.IsSubDomain(z.zone, name) {
			m.Rcode = dns.RcodeRefused
			_ = w.WriteMsg(m)
			return
		}
		m.Authoritative = true
	} else {
		m.RecursionAvailable = true
	}
	exists := false
	for cur, hops := name, 0; hops < 8; hops++ {
		var cname string
		for _, rr := range z.records {
			h := rr.Header()
			if !strings.EqualFold(h.Name, cur) {
				continue
			}
			exists = true
			if h.Rrtype == q.Qtype {
				m.Answer = append(m.Answer, rr)
			} else if c, ok := rr.(*dns.CNAME); ok && q.Qtype != dns.TypeCNAME {
				m.Answer = append(m.Answer, rr)
				cname = c.Target
			}
		}
		// A zone's server follows aliases only inside its zone.
		if cname == "" || (z.zone != "" && !dns.IsSubDomain(z.zone, cname)) {
			break
		}
		cur = cname
	}
	if len(m.Answer) == 0 {
		if !exists {
			m.Rcode = dns.RcodeNameError
		}
		for _, rr := range z.records {
			if soa, ok := rr.(*dns.SOA); ok && dns.IsSubDomain(soa.Hdr.Name, name) {
				m.Ns = append(m.Ns, soa)
			}
		}
	}
	_ = w.WriteMsg(m)
}

// Seen lists the queries asked, as "name type rd" or "name type nord".
func (z *Zone) Seen() []string {
	z.mu.Lock()
	defer z.mu.Unlock()
	return slices.Clone(z.queries)
}

// DelegatedZone starts the nameserver of shop.deleg.test, a subdomain
// delegated as a zone of its own whose apex has the address apexAddr, and
// a resolver that knows the delegation. The nameserver is on loopback, as
// test servers are: checkers must allow private nameservers and ask on
// nameserverPort.
func DelegatedZone(t testing.TB, apexAddr string) (auth *Zone, resolverAddr string, nameserverPort int) {
	t.Helper()
	soa := "shop.deleg.test. 3600 IN SOA ns1.shop.deleg.test. hostmaster.shop.deleg.test. 1 3600 600 86400 60"
	auth, authAddr := NewZone(t, "shop.deleg.test.",
		soa,
		"shop.deleg.test. 3600 IN NS ns1.shop.deleg.test.",
		"ns1.shop.deleg.test. 3600 IN A 127.0.0.1",
		"shop.deleg.test. 3600 IN A "+apexAddr,
	)
	_, resolverAddr = NewZone(t, "",
		soa,
		"shop.deleg.test. 3600 IN NS ns1.shop.deleg.test.",
		"ns1.shop.deleg.test. 3600 IN A 127.0.0.1",
	)
	_, port, _ := net.SplitHostPort(authAddr)
	nameserverPort, _ = strconv.Atoi(port)
	return auth, resolverAddr, nameserverPort
}
