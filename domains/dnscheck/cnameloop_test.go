package dnscheck_test

import (
	"strings"
	"testing"
	"time"

	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
)

// TestCNAMELoopIsNamed: a CNAME that loops, to itself or through another
// name, is named as such, not as a DNS server that could not be reached
// (the servers answered every query), and the fix says what to do.
func TestCNAMELoopIsNamed(t *testing.T) {
	resolver := domaintest.StartFaultyDNS(t)
	c := &dnscheck.Checker{
		Resolvers: []string{resolver.Addr()}, Platform: dnscheck.Platform{CNAMETarget: target},
		Timeout: time.Second, AllowPrivateNameservers: true,
	}
	resolver.SetCNAME(t, "self.loop.test", "self.loop.test")
	resolver.SetCNAME(t, "a.loop.test", "b.other.test")
	resolver.SetCNAME(t, "b.other.test", "a.loop.test")
	for _, name := range []string{"self.loop.test", "a.loop.test"} {
		r := check(t, c, name)
		if r.Verified {
			t.Fatalf("%s verified", name)
		}
		n := 0
		for _, f := range r.Findings {
			if f.Code != dnscheck.CodeDNSError {
				continue
			}
			n++
			if strings.Contains(f.Message, "could not be reached") || !strings.Contains(f.Message, "loop") ||
				strings.Contains(f.Fix, "temporary") || !strings.Contains(f.Fix, "CNAME") {
				t.Errorf("%s: %s\nfix: %s", name, f.Message, f.Fix)
			}
		}
		if n == 0 {
			t.Errorf("%s: no finding names the failed lookup: %+v", name, r.Findings)
		}
	}
}
