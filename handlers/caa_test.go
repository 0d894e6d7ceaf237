package handlers_test

import (
	"testing"
	"time"

	"petstore/domains"
	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
)

// TestCAAWarningVerifies: without the CA's CAA identity (no
// --acme-caa-identity, no ACME directory to ask), CAA records naming a CA
// give a warning finding, valid against the admin spec, and the domain
// verifies.
func TestCAAWarningVerifies(t *testing.T) {
	dns := domaintest.StartDNS(t)
	ts := newTestServer(t, withDomains(t, domains.Config{
		Platform: dnscheck.Platform{Domain: domaintest.PlatformDomain, CNAMETarget: domaintest.CNAMETarget},
		Checker:  &dnscheck.Checker{Resolvers: []string{dns.Addr()}, Timeout: time.Second},
	}))
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)
	ts.adminDo("POST", "/admin/domains", `{"name":"shop.example.com"}`).wantStatus(201)
	dns.SetCNAME(t, "shop.example.com", domaintest.CNAMETarget)
	dns.AddCAA(t, "example.com", "issue", "other-ca.example")

	var d domainJSON
	ts.adminDo("POST", "/admin/domains/shop.example.com/verify", "").wantStatus(200).decode(&d)
	if d.State != "verified" || d.Check == nil || !d.Check.Verified || len(d.Check.Findings) != 1 {
		t.Fatalf("state %s check %+v", d.State, d.Check)
	}
	if f := d.Check.Findings[0]; f.Code != dnscheck.CodeCAAUnchecked || !f.Warning {
		t.Fatalf("finding %+v", f)
	}
}
