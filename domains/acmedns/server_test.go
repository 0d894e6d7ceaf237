package acmedns_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"petstore/domains/acmedns"
	"petstore/domains/domaintest"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
)

const zone = "acme.plat.test"

// startServer starts a server for zone on a fresh store, on UDP and TCP of
// one loopback port, stopped when the test ends.
func startServer(t *testing.T, kv acmedns.Store, cfg acmedns.Config) (udp, tcp string) {
	t.Helper()
	cfg.Zone, cfg.Store = zone, kv
	return domaintest.StartACMEDNS(t, cfg)
}

func ask(t *testing.T, network, server, name string, qtype uint16) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: network, Timeout: 2 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	r, _, err := c.Exchange(m, server)
	if err != nil {
		t.Fatalf("%s %s over %s: %v", name, dns.TypeToString[qtype], network, err)
	}
	return r
}

// TestAnswers: TXT for a label from the store, over UDP and TCP; the
// zone's SOA and NS with AA; NXDOMAIN for unknown labels and names below
// them; REFUSED for the parent zone, customers' names and the root, with
// no recursion offered.
func TestAnswers(t *testing.T) {
	db := domaintest.OpenStore(t)
	udp, tcp := startServer(t, db, acmedns.Config{Nameservers: []string{"ns1.plat.test", "ns2.plat.test"}})
	ctx := context.Background()
	if err := acmedns.SetTXT(ctx, db, "Label1", []string{"token-a", "token-b"}); err != nil {
		t.Fatal(err)
	}
	for _, network := range []string{"udp", "tcp"} {
		server := map[string]string{"udp": udp, "tcp": tcp}[network]
		r := ask(t, network, server, "label1."+zone, dns.TypeTXT)
		if r.Rcode != dns.RcodeSuccess || !r.Authoritative || len(r.Answer) != 2 {
			t.Fatalf("TXT over %s: %v", network, r)
		}
		got := []string{r.Answer[0].(*dns.TXT).Txt[0], r.Answer[1].(*dns.TXT).Txt[0]}
		if got[0] != "token-a" || got[1] != "token-b" || r.Answer[0].Header().Ttl != acmedns.TTL {
			t.Errorf("TXT over %s: %v", network, r.Answer)
		}
	}
	if r := ask(t, "udp", udp, zone, dns.TypeSOA); r.Rcode != dns.RcodeSuccess || !r.Authoritative || len(r.Answer) != 1 || r.Answer[0].(*dns.SOA).Ns != "ns1.plat.test." {
		t.Errorf("SOA: %v", r)
	}
	if r := ask(t, "udp", udp, zone, dns.TypeNS); !r.Authoritative || len(r.Answer) != 2 || r.Answer[1].(*dns.NS).Ns != "ns2.plat.test." {
		t.Errorf("NS: %v", r)
	}
	if r := ask(t, "udp", udp, "label1."+zone, dns.TypeA); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 || len(r.Ns) != 1 {
		t.Errorf("A of a label with TXT: %v", r)
	}
	for _, name := range []string{"unknown." + zone, "x.label1." + zone, "bad_label." + zone} {
		if r := ask(t, "udp", udp, name, dns.TypeTXT); r.Rcode != dns.RcodeNameError || !r.Authoritative || len(r.Ns) != 1 {
			t.Errorf("%s: %v", name, r)
		}
	}
	for _, name := range []string{"plat.test", "_acme-challenge.shop.customer.test", "example.com", "."} {
		r := ask(t, "udp", udp, name, dns.TypeTXT)
		if r.Rcode != dns.RcodeRefused || r.Authoritative || r.RecursionAvailable || len(r.Answer) != 0 {
			t.Errorf("%s: %v", name, r)
		}
	}
	// Many values: over UDP, only what fits in 512 bytes, with TC set;
	// over TCP, all of them.
	many := make([]string, 40)
	for i := range many {
		many[i] = strings.Repeat("v", 40)
	}
	if err := acmedns.SetTXT(ctx, db, "many", many); err != nil {
		t.Fatal(err)
	}
	c := &dns.Client{Net: "udp", Timeout: 2 * time.Second, UDPSize: 4096}
	q := new(dns.Msg)
	q.SetQuestion("many."+zone+".", dns.TypeTXT)
	r, _, err := c.Exchange(q, udp)
	if err != nil {
		t.Fatal(err)
	}
	if r.Compress = true; !r.Truncated || r.Len() > dns.MinMsgSize || len(r.Answer) == 0 {
		t.Errorf("40 TXT values over UDP without EDNS0: truncated %v, %d bytes, %d answers", r.Truncated, r.Len(), len(r.Answer))
	}
	if r := ask(t, "tcp", tcp, "many."+zone, dns.TypeTXT); r.Truncated || len(r.Answer) != 40 {
		t.Errorf("40 TXT values over TCP: truncated %v, %d answers", r.Truncated, len(r.Answer))
	}
	if err := acmedns.DeleteTXT(ctx, db, "label1"); err != nil {
		t.Fatal(err)
	}
	if r := ask(t, "tcp", tcp, "label1."+zone, dns.TypeTXT); r.Rcode != dns.RcodeNameError {
		t.Errorf("after DeleteTXT: %v", r)
	}
}

// TestEveryInstanceAnswersTheSame: a TXT written through one instance's
// store handle is answered by another instance's server at once: on one
// bbolt file, and on PostgreSQL with a handle each.
func TestEveryInstanceAnswersTheSame(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) {
		db := domaintest.OpenStore(t)
		sameAnswers(t, db, db, db)
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.URL(t)
		open := func() *postgres.DB { return domaintest.OpenPostgres(t, url) }
		a, b := open(), open()
		sameAnswers(t, a, b, a)
	})
}

// sameAnswers starts a server on a and one on b, writes a TXT through w,
// and asks both.
func sameAnswers(t *testing.T, a, b, w acmedns.Store) {
	addrA, _ := startServer(t, a, acmedns.Config{})
	addrB, _ := startServer(t, b, acmedns.Config{})
	if err := acmedns.SetTXT(context.Background(), w, "shared", []string{"v"}); err != nil {
		t.Fatal(err)
	}
	for _, server := range []string{addrA, addrB} {
		if r := ask(t, "udp", server, "shared."+zone, dns.TypeTXT); len(r.Answer) != 1 {
			t.Errorf("%s: %v", server, r)
		}
	}
}

// TestFloodFromOneNetworkIsLimited: 600 questions as fast as one source
// can send get no more answers than the network's allowance, and a client
// in another network is answered throughout.
func TestFloodFromOneNetworkIsLimited(t *testing.T) {
	db := domaintest.OpenStore(t)
	udp, _ := startServer(t, db, acmedns.Config{Rate: 20, Burst: 40})
	conn := dialFrom(t, "udp", net.IPv4(127, 0, 0, 1), udp)
	q := new(dns.Msg)
	q.SetQuestion(zone+".", dns.TypeSOA)
	wire, err := q.Pack()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	const sent = 600
	for range sent {
		if _, err := conn.Write(wire); err != nil {
			t.Fatal(err)
		}
	}
	sending := time.Since(start)
	answers := 0
	buf := make([]byte, 512)
	for {
		_ = conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if _, err := conn.Read(buf); err != nil {
			break
		}
		answers++
	}
	// The allowance: the burst, and the rate over the time it took.
	allowed := 40 + int(20*(time.Since(start).Seconds())) + 1
	t.Logf("%d questions sent in %v, %d answered (allowance %d)", sent, sending, answers, allowed)
	if answers == 0 || answers > allowed {
		t.Errorf("%d answers to %d questions from one network, want 1 to %d", answers, sent, allowed)
	}
	// 127.0.1.0/24 is another network.
	other := &dns.Client{Net: "udp", Timeout: 2 * time.Second, Dialer: &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.IPv4(127, 0, 1, 1)}}}
	if r, _, err := other.Exchange(q, udp); err != nil || r.Rcode != dns.RcodeSuccess {
		t.Errorf("a client of another network during the flood: %v, %v", r, err)
	}
}

func TestMain(m *testing.M) {
	pgtest.Main(m)
}
