package domains_test

import (
	"context"
	"testing"

	"petstore/domains"
	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
	"petstore/store"
)

var wildcardPlatform = dnscheck.Platform{Domain: "petstore.app", CNAMETarget: "cname.petstore.app"}

// TestAddWildcard: a wildcard is added only while the service answers an
// ACME DNS zone; its name is normalised, its CNAME record is the "*" one,
// and it is found, listed and removed under its own name.
func TestAddWildcard(t *testing.T) {
	ctx := context.Background()
	without := managerWith(t, domains.Config{Platform: wildcardPlatform})
	_, err := without.Add(ctx, "*.shop.example.com")
	wantCode(t, err, store.ENOACMEDNSZONE, "*.shop.example.com", "--acme-dns-zone", "DNS-01")
	if ds, _ := without.List(ctx); len(ds) != 0 {
		t.Fatalf("stored without the zone: %+v", ds)
	}
	if _, err := without.Add(ctx, "shop.example.com"); err != nil {
		t.Fatalf("a single name needs no zone: %v", err)
	}

	m := managerWith(t, domains.Config{Platform: wildcardPlatform, ACMEDNSZone: "acme.petstore.app"})
	d, err := m.Add(ctx, " *.Shop.Example.COM. ")
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "*.shop.example.com" || d.State != store.DomainPending || d.Apex || len(d.Records) == 0 {
		t.Fatalf("added %+v", d)
	}
	r := d.Records[0]
	if r.Type != dnscheck.TypeCNAME || r.Host != "*.shop" || r.Name != "*.shop.example.com" || r.Value != "cname.petstore.app" {
		t.Errorf("record %+v", r)
	}
	_, err = m.Add(ctx, "*.shop.example.com")
	wantCode(t, err, store.EDOMAINEXISTS)
	for in, mention := range map[string]string{
		"a.*.example.com":   "* as the whole first label",
		"*.*.example.com":   "* as the whole first label",
		"*.co.uk":           "public suffix co.uk",
		"*.petstore.app":    "belongs to the platform",
		"*.x.petstore.app":  "belongs to the platform",
		"*.shop.example":    ".example",
		"*.shop.example.zz": "not a top-level domain",
	} {
		_, err := m.Add(ctx, in)
		wantCode(t, err, store.EINVALID, mention)
	}
	for _, name := range []string{"*.shop.example.com", "*.SHOP.example.com."} {
		if got, err := m.Get(ctx, name); err != nil || got.Name != "*.shop.example.com" {
			t.Errorf("Get(%q) = %+v, %v", name, got.Name, err)
		}
	}
	if _, err := m.Get(ctx, "a.shop.example.com"); store.ErrorCode(err) != store.ENOTFOUND {
		t.Errorf("a covered name is not an attached domain: %v", err)
	}
	if err := m.Remove(ctx, "*.shop.example.com"); err != nil {
		t.Fatal(err)
	}
	if ds, _ := m.List(ctx); len(ds) != 0 {
		t.Errorf("left after removal: %+v", ds)
	}
}

// TestWildcardRouting: a served wildcard covers every name one label below
// its base and nothing else; a name attached on its own wins once it is
// served; removing the wildcard stops every name under it at once.
func TestWildcardRouting(t *testing.T) {
	ctx := context.Background()
	db := deployedStore(t)
	m := domaintest.NewManager(t, domains.Config{Store: db, Checker: &dnscheck.Checker{}, Platform: wildcardPlatform, ACMEDNSZone: "acme.petstore.app"})
	for _, name := range []string{"*.shop.example.com", "api.shop.example.com", "other.example.com"} {
		if _, err := m.Add(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	setState := func(name, state string) {
		t.Helper()
		if _, err := db.UpdateDomain(ctx, name, func(d *store.Domain) error { d.State = state; return nil }); err != nil {
			t.Fatal(err)
		}
		if err := m.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := func(when string, routes map[string]domains.Decision, covers map[string]string) {
		t.Helper()
		for host, d := range routes {
			if got := m.Route(host).Decision; got != d {
				t.Errorf("%s: Route(%s) = %v, want %v", when, host, got, d)
			}
		}
		for host, w := range covers {
			if got := m.CertificateCover(host); got != w {
				t.Errorf("%s: the certificate of %s is %q's, want %q's", when, host, got, w)
			}
			if m.CertificateAllowed(host) && host != "api.shop.example.com" && host != "*.shop.example.com" {
				t.Errorf("%s: %s may get a certificate of its own", when, host)
			}
		}
	}

	want("pending", map[string]domains.Decision{"a.shop.example.com": domains.Unknown, "api.shop.example.com": domains.Unknown},
		map[string]string{"a.shop.example.com": ""})

	setState("*.shop.example.com", store.DomainVerified)
	want("wildcard verified", map[string]domains.Decision{
		"a.shop.example.com":      domains.ServePublic,
		"B.Shop.Example.com.:443": domains.ServePublic,
		"api.shop.example.com":    domains.ServePublic, // attached, pending: the wildcard keeps serving it
		"shop.example.com":        domains.Unknown,     // the base is not covered
		"x.y.shop.example.com":    domains.Unknown,     // two labels below
		"*.shop.example.com":      domains.Unknown,     // the literal name is no host
		"a.shopx.example.com":     domains.Unknown,
		"a.other.example.com":     domains.Unknown,
	}, map[string]string{
		"a.shop.example.com":   "*.shop.example.com",
		"api.shop.example.com": "*.shop.example.com",
		"x.y.shop.example.com": "",
		"shop.example.com":     "",
		"*.shop.example.com":   "",
	})
	if !m.CertificateAllowed("*.shop.example.com") {
		t.Error("the verified wildcard may not get its certificate")
	}
	for _, host := range []string{"a.shop.example.com", "x.y.shop.example.com", "shop.example.com"} {
		if m.CertificateAllowed(host) {
			t.Errorf("%s may get a certificate of its own: the decision function would order one", host)
		}
	}

	setState("api.shop.example.com", store.DomainVerified)
	want("exact verified", map[string]domains.Decision{"api.shop.example.com": domains.ServePublic, "a.shop.example.com": domains.ServePublic},
		map[string]string{"a.shop.example.com": "*.shop.example.com"})
	if !m.CertificateAllowed("api.shop.example.com") {
		t.Error("the exact domain, once verified, gets a certificate of its own")
	}

	if err := m.Remove(ctx, "*.shop.example.com"); err != nil {
		t.Fatal(err)
	}
	want("wildcard removed", map[string]domains.Decision{
		"a.shop.example.com":   domains.Unknown,
		"b.shop.example.com":   domains.Unknown,
		"api.shop.example.com": domains.ServePublic, // served on its own
	}, map[string]string{"a.shop.example.com": ""})
}

// TestRedirectsRefuseWildcards: a redirect answers one Host with one
// Location, so neither end may be a wildcard, nor may the primary domain.
func TestRedirectsRefuseWildcards(t *testing.T) {
	ctx := context.Background()
	db := deployedStore(t)
	m := domaintest.NewManager(t, domains.Config{Store: db, Checker: &dnscheck.Checker{}, Platform: wildcardPlatform, ACMEDNSZone: "acme.petstore.app"})
	for _, name := range []string{"*.shop.example.com", "www.example.com"} {
		if _, err := m.Add(ctx, name); err != nil {
			t.Fatal(err)
		}
		if _, err := db.UpdateDomain(ctx, name, func(d *store.Domain) error { d.State = store.DomainVerified; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		in      store.Settings
		mention string
	}{
		{store.Settings{Domains: store.DomainSettings{Redirects: []store.Redirect{{From: "*.shop.example.com", To: "www.example.com"}}}}, "domains.redirects[0].from: *.shop.example.com is a wildcard"},
		{store.Settings{Domains: store.DomainSettings{Redirects: []store.Redirect{{From: "www.example.com", To: "*.Shop.example.com"}}}}, "domains.redirects[0].to: *.shop.example.com is a wildcard"},
		{store.Settings{Domains: store.DomainSettings{Primary: "*.shop.example.com"}}, "domains.primary: *.shop.example.com is a wildcard"},
	} {
		_, err := m.SaveSettings(ctx, tc.in)
		wantCode(t, err, store.EINVALID, tc.mention, "www.shop.example.com")
	}
	if s, _ := m.Settings(ctx); len(s.Domains.Redirects) != 0 || s.Domains.Primary != "" {
		t.Errorf("saved: %+v", s)
	}
}

// TestWildcardSharesDelegationWithBase: *.shop.example.com and
// shop.example.com name the same _acme-challenge.shop.example.com, which
// holds one CNAME: whichever is added second gets the first's token and
// label, so the records shown never contradict each other.
func TestWildcardSharesDelegationWithBase(t *testing.T) {
	ctx := context.Background()
	m := managerWith(t, domains.Config{Platform: wildcardPlatform, ACMEDNSZone: "acme.petstore.app"})
	delegation := func(d store.Domain) (txt, cname store.DNSRecord) {
		t.Helper()
		for _, r := range d.Records {
			switch r.Purpose {
			case store.RecordPurposeOwnership:
				txt = r
			case store.RecordPurposeDelegation:
				cname = r
			}
		}
		if txt.Name == "" || cname.Name == "" {
			t.Fatalf("%s has no delegation records: %+v", d.Name, d.Records)
		}
		return txt, cname
	}
	for _, order := range [][2]string{{"*.shop.example.com", "shop.example.com"}, {"www.example.com", "*.www.example.com"}} {
		first, err := m.Add(ctx, order[0])
		if err != nil {
			t.Fatal(err)
		}
		second, err := m.Add(ctx, order[1])
		if err != nil {
			t.Fatal(err)
		}
		t1, c1 := delegation(first)
		t2, c2 := delegation(second)
		if t1 != t2 || c1 != c2 || *first.Delegation != *second.Delegation {
			t.Errorf("%s and %s disagree:\n%+v %+v\n%+v %+v", order[0], order[1], t1, c1, t2, c2)
		}
	}
	other, err := m.Add(ctx, "other.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if other.Delegation.Label == "" || other.Delegation.Label == func() string { d, _ := m.Get(ctx, "shop.example.com"); return d.Delegation.Label }() {
		t.Errorf("an unrelated domain shares a label: %+v", other.Delegation)
	}
}
