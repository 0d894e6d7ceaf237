package main

import (
	"regexp"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestRunAnswersTheACMEZone: with --acme-dns-zone, run answers the zone's
// SOA over UDP and TCP on --dns-listen, and refuses other names;
// --dns-listen alone is refused, naming the flag it needs.
func TestRunAnswersTheACMEZone(t *testing.T) {
	in := start(t, nil, "--data", t.TempDir()+"/p.db", "--acme-dns-zone", "acme.plat.test", "--dns-listen", "127.0.0.1:0", "--acme-dns-ns", "ns1.plat.test")
	m := regexp.MustCompile(`answering DNS for the ACME zone.* udp=(\S+) tcp=(\S+)`).FindStringSubmatch(in.out.String())
	if m == nil {
		t.Fatalf("no DNS server in the log:\n%s", in.out)
	}
	for network, addr := range map[string]string{"udp": m[1], "tcp": m[2]} {
		c := &dns.Client{Net: network, Timeout: 2 * time.Second}
		q := new(dns.Msg)
		q.SetQuestion("acme.plat.test.", dns.TypeSOA)
		r, _, err := c.Exchange(q, addr)
		if err != nil || !r.Authoritative || len(r.Answer) != 1 || r.Answer[0].(*dns.SOA).Ns != "ns1.plat.test." {
			t.Errorf("SOA over %s: %v %v", network, r, err)
		}
		q.SetQuestion("plat.test.", dns.TypeSOA)
		if r, _, err := c.Exchange(q, addr); err != nil || r.Rcode != dns.RcodeRefused {
			t.Errorf("the parent zone over %s: %v %v", network, r, err)
		}
	}

	err := run(t.Context(), []string{"--listen", "127.0.0.1:0", "--data", t.TempDir() + "/q.db", "--dns-listen", "127.0.0.1:0"}, func(string) string { return "" }, &discard{})
	if err == nil || !regexp.MustCompile(`--dns-listen needs --acme-dns-zone`).MatchString(err.Error()) {
		t.Errorf("--dns-listen without a zone: %v", err)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
