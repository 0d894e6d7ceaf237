package domaintest

import (
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// Fault is how FaultyDNS misbehaves on a query it is told to fail.
type Fault int

// The faults a real DNS server shows in an incident.
const (
	// NoFault answers from the records.
	NoFault Fault = iota
	// ServFail answers SERVFAIL.
	ServFail
	// Refused answers REFUSED.
	Refused
	// Drop sends no answer, so the client times out.
	Drop
	// Truncate answers with the TC bit and no records; the server has no
	// TCP listener, so the client's retry over TCP fails.
	Truncate
)

// FaultyDNS is a DNS server on a loopback UDP port that plays a recursive
// resolver with its own records and can be told to fail every n-th query.
// challtestsrv cannot: its only fault is SERVFAIL on every query for a name.
// It serves no SOA (an empty NOERROR answer), so a checker uses it as a
// resolver; a name without records is NXDOMAIN.
type FaultyDNS struct {
	addr string

	mu      sync.Mutex
	records map[string][]dns.RR // by lower-case FQDN
	fault   Fault
	every   int // fail the queries whose number is a multiple of every
	queries int
	faulted int
}

// StartFaultyDNS starts a FaultyDNS and stops it when tb's test ends.
func StartFaultyDNS(tb testing.TB) *FaultyDNS {
	tb.Helper()
	f := &FaultyDNS{records: map[string][]dns.RR{}}
	f.addr = ServeDNS(tb, f)
	return f
}

// ServeDNS serves h over UDP on a free loopback port until tb's test ends,
// and returns the server's address (host:port) once it answers.
func ServeDNS(tb testing.TB, h dns.Handler) string {
	tb.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("domaintest: %v", err)
	}
	serve(tb, &dns.Server{PacketConn: pc, Handler: h})
	return pc.LocalAddr().String()
}

// serve runs srv, on its listener, until tb's test ends; it returns once
// srv serves.
func serve(tb testing.TB, srv *dns.Server) {
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	tb.Cleanup(func() { _ = srv.Shutdown() })
}

// Addr returns the server's address, host:port (UDP only).
func (f *FaultyDNS) Addr() string { return f.addr }

// SetCNAME makes name an alias of target, replacing its records.
func (f *FaultyDNS) SetCNAME(tb testing.TB, name, target string) {
	tb.Helper()
	rr, err := dns.NewRR(fqdn(name) + " 60 IN CNAME " + dns.Fqdn(target))
	if err != nil {
		tb.Fatalf("domaintest: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.records[fqdn(name)] = []dns.RR{rr}
}

// Clear removes every record of name: it answers NXDOMAIN.
func (f *FaultyDNS) Clear(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.records, fqdn(name))
}

// SetFault makes the server fail every n-th query from now on with fault
// (n = 1: every query; n = 2: every other one). NoFault or n < 1 heals it.
func (f *FaultyDNS) SetFault(fault Fault, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault, f.every, f.queries = fault, n, 0
	if n < 1 {
		f.fault = NoFault
	}
}

// Faulted returns how many queries got a fault in place of an answer.
func (f *FaultyDNS) Faulted() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.faulted
}

// ServeDNS answers one query.
func (f *FaultyDNS) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	m, q, ok := recursiveReply(w, req)
	if !ok {
		return
	}

	f.mu.Lock()
	fault := NoFault
	if f.fault != NoFault {
		f.queries++
		if f.queries%f.every == 0 {
			fault = f.fault
			f.faulted++
		}
	}
	name := strings.ToLower(q.Name)
	_, exists := f.records[name]
	// Follow aliases within the records, as a resolver would.
	for hops := 0; hops < 8; hops++ {
		next := appendAnswers(m, q.Qtype, f.records[name])
		if next == "" {
			break
		}
		name = next
	}
	f.mu.Unlock()

	switch fault {
	case ServFail:
		m.Answer, m.Rcode = nil, dns.RcodeServerFailure
	case Refused:
		m.Answer, m.Rcode = nil, dns.RcodeRefused
	case Drop:
		return
	case Truncate:
		m.Answer, m.Truncated = nil, true
	default:
		if !exists && q.Qtype != dns.TypeSOA {
			m.Rcode = dns.RcodeNameError
		}
	}
	_ = w.WriteMsg(m)
}
