package handlers_test

import (
	"sync"
	"testing"
	"time"

	"petstore/domains"
	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
	"petstore/store"
)

// TestDomainAnswersWhileDNSFlaps: the admin API's domain answers carry
// the warning finding of a failed lookup, the count of checks pointing
// elsewhere and the time of the move, as the admin spec describes them
// (every answer is validated against it).
func TestDomainAnswersWhileDNSFlaps(t *testing.T) {
	resolver := domaintest.StartFaultyDNS(t)
	var mu sync.Mutex
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ts := newTestServer(t, withDomains(t, domains.Config{
		Platform:      dnscheck.Platform{Domain: domaintest.PlatformDomain, CNAMETarget: domaintest.CNAMETarget},
		Checker:       &dnscheck.Checker{Resolvers: []string{resolver.Addr()}, Timeout: time.Second, AllowPrivateNameservers: true},
		Now:           clock,
		AllowTestTLDs: true,
	}))
	const name = "shop.flap.test"
	resolver.SetCNAME(t, name, domaintest.CNAMETarget)
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)
	ts.adminDo("POST", "/admin/domains", `{"name":"`+name+`"}`).wantStatus(201)
	verify := func() store.Domain {
		t.Helper()
		var d store.Domain
		ts.adminDo("POST", "/admin/domains/"+name+"/verify", "").wantStatus(200).decode(&d)
		return d
	}
	if d := verify(); d.State != store.DomainVerified {
		t.Fatalf("verify: %+v", d)
	}

	resolver.SetFault(domaintest.ServFail, 1)
	d := verify()
	if d.State != store.DomainVerified || d.Check == nil || len(d.Check.Findings) != 1 ||
		d.Check.Findings[0].Code != dnscheck.CodeDNSError {
		t.Fatalf("Re-verify during a SERVFAIL: %+v %+v", d, d.Check)
	}

	resolver.SetFault(domaintest.NoFault, 0)
	resolver.SetCNAME(t, name, "old-host.example.net")
	for i := range 3 {
		if i > 0 {
			mu.Lock()
			now = now.Add(30 * time.Minute)
			mu.Unlock()
		}
		d = verify()
	}
	if d.State != store.DomainMoved || d.MovedAt == nil || d.PointsElsewhereChecks != 3 || d.PointsElsewhereSince == nil {
		t.Fatalf("after 3 checks over an hour pointing elsewhere: %+v", d)
	}
	var listed []store.Domain
	ts.adminDo("GET", "/admin/domains", "").wantStatus(200).decode(&listed)
	if len(listed) != 1 || listed[0].State != store.DomainMoved {
		t.Fatalf("list: %+v", listed)
	}
}
