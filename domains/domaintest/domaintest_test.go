package domaintest_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"petstore/domains/domaintest"
)

func query(t *testing.T, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s %s: %v", name, dns.TypeToString[qtype], err)
	}
	return r
}

func TestStartDNS(t *testing.T) {
	d := domaintest.StartDNS(t)

	// Defaults are off: an unknown name has no address.
	if r := query(t, d.Addr(), "unknown.example.test", dns.TypeA); len(r.Answer) != 0 {
		t.Errorf("unknown name answered %v, want nothing (-defaultIPv4 \"\")", r.Answer)
	}
	if r := query(t, d.Addr(), "unknown.example.test", dns.TypeAAAA); len(r.Answer) != 0 {
		t.Errorf("unknown name answered %v, want nothing (-defaultIPv6 \"\")", r.Answer)
	}

	// Hosts are stored lower-cased with a trailing dot, as queries ask.
	d.AddA(t, "Shop.Example.TEST", "192.0.2.1", "192.0.2.2")
	r := query(t, d.Addr(), "shop.example.test.", dns.TypeA)
	if len(r.Answer) != 2 {
		t.Fatalf("A answer %v, want 2 records", r.Answer)
	}
	d.AddAAAA(t, "shop.example.test", "2001:db8::1")
	if r := query(t, d.Addr(), "shop.example.test", dns.TypeAAAA); len(r.Answer) != 1 {
		t.Errorf("AAAA answer %v", r.Answer)
	}
	d.Clear(t, domaintest.A, "shop.example.test")
	d.Clear(t, domaintest.AAAA, "shop.example.test")
	if r := query(t, d.Addr(), "shop.example.test", dns.TypeA); len(r.Answer) != 0 {
		t.Errorf("after Clear(A): %v", r.Answer)
	}

	d.SetCNAME(t, "www.example.test", "target.example.test")
	d.AddA(t, "target.example.test", "192.0.2.9")
	r = query(t, d.Addr(), "www.example.test", dns.TypeA)
	if len(r.Answer) != 2 || r.Answer[0].Header().Rrtype != dns.TypeCNAME || r.Answer[1].(*dns.A).A.String() != "192.0.2.9" {
		t.Errorf("CNAME then A expected, got %v", r.Answer)
	}
	d.Clear(t, domaintest.CNAME, "www.example.test")
	if r := query(t, d.Addr(), "www.example.test", dns.TypeCNAME); len(r.Answer) != 0 {
		t.Errorf("after ClearCNAME: %v", r.Answer)
	}

	d.AddCAA(t, "example.test", "issue", "letsencrypt.org")
	r = query(t, d.Addr(), "example.test", dns.TypeCAA)
	if len(r.Answer) != 1 || r.Answer[0].(*dns.CAA).Value != "letsencrypt.org" || r.Answer[0].(*dns.CAA).Tag != "issue" {
		t.Errorf("CAA answer %v", r.Answer)
	}
	d.Clear(t, domaintest.CAA, "example.test")
	if r := query(t, d.Addr(), "example.test", dns.TypeCAA); len(r.Answer) != 0 {
		t.Errorf("after Clear(CAA): %v", r.Answer)
	}

	d.SetServfail(t, "broken.example.test")
	if r := query(t, d.Addr(), "broken.example.test", dns.TypeA); r.Rcode != dns.RcodeServerFailure {
		t.Errorf("rcode %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	d.Clear(t, domaintest.Servfail, "broken.example.test")
	if r := query(t, d.Addr(), "broken.example.test", dns.TypeA); r.Rcode != dns.RcodeSuccess {
		t.Errorf("after Clear(Servfail): rcode %s", dns.RcodeToString[r.Rcode])
	}

	// Two instances do not share ports or records.
	d2 := domaintest.StartDNS(t)
	if d2.Addr() == d.Addr() {
		t.Fatal("second instance on the same address")
	}
	d.AddA(t, "only-first.example.test", "192.0.2.3")
	if r := query(t, d2.Addr(), "only-first.example.test", dns.TypeA); len(r.Answer) != 0 {
		t.Errorf("second instance answered the first's record: %v", r.Answer)
	}
}

func TestStartPebble(t *testing.T) {
	d := domaintest.StartDNS(t)
	p := domaintest.StartPebble(t, d, domaintest.PebbleOptions{})

	if p.HTTPPort == 0 || p.TLSPort == 0 || p.HTTPPort == p.TLSPort {
		t.Errorf("challenge ports %d and %d", p.HTTPPort, p.TLSPort)
	}
	// Below the ephemeral range, so that no outgoing connection or port-0
	// listener takes them before the test listens there.
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if low, _ := strconv.Atoi(strings.Fields(string(b))[0]); p.HTTPPort >= low || p.TLSPort >= low {
			t.Errorf("challenge ports %d and %d are in the ephemeral range (from %d)", p.HTTPPort, p.TLSPort, low)
		}
	}
	if !strings.HasPrefix(p.DirectoryURL(), "https://127.0.0.1:") {
		t.Errorf("DirectoryURL %s", p.DirectoryURL())
	}

	// A client that trusts only RootsPEM reaches the directory.
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(p.RootsPEM()) {
		t.Fatal("RootsPEM holds no certificate")
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest(http.MethodGet, p.DirectoryURL(), nil)
	req.Header.Set("User-Agent", "domaintest-test")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET directory: %v", err)
	}
	defer resp.Body.Close()
	var dir map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&dir); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("directory: %s, %v", resp.Status, err)
	}
	for _, k := range []string{"newNonce", "newAccount", "newOrder"} {
		if _, ok := dir[k].(string); !ok {
			t.Errorf("directory lacks %s: %v", k, dir)
		}
	}
	if meta, _ := dir["meta"].(map[string]any); meta == nil || meta["profiles"] == nil {
		t.Errorf("directory meta has no profiles: %v", dir["meta"])
	}

	// A client that does not trust it fails: RootsPEM is what makes it work.
	if _, err := (&http.Client{Timeout: 5 * time.Second}).Get(p.DirectoryURL()); err == nil {
		t.Error("the system roots trusted pebble's certificate")
	}

	root := p.IssuerRootPEM(t)
	block, _ := pem.Decode(root)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || !cert.IsCA {
		t.Fatalf("issuer root: %v, CA %v", err, err == nil && cert.IsCA)
	}

	// Another pebble gets its own ports and its own issuer root.
	p2 := domaintest.StartPebble(t, d, domaintest.PebbleOptions{})
	if p2.DirectoryURL() == p.DirectoryURL() {
		t.Fatal("two pebbles on one address")
	}
	if string(p2.IssuerRootPEM(t)) == string(root) {
		t.Error("two pebbles share an issuer root")
	}
}
