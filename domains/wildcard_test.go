package domains_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

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
		txt, cname = findDelegationRecords(d)
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

// TestWildcardAgainstPebble: *.shop.customer.test, with its ownership and
// delegation records at shop.customer.test and its "*" CNAME pointing
// here, is verified and gets one certificate, for the wildcard, through
// DNS-01; handshakes for a.shop and b.shop both get it. An exact
// api.shop.customer.test beside it gets its own; x.y.shop.customer.test
// gets none, and no order is made for it.
func TestWildcardAgainstPebble(t *testing.T) {
	if testing.Short() {
		t.Skip("starts pebble")
	}
	db, resolver, pebble, m := startDelegated(t, domaintest.PebbleOptions{}, domains.ACME{})
	tlsAddr := serveTLS(t, m)
	ctx := context.Background()
	const wildcard, base = "*.shop.customer.test", "shop.customer.test"

	d, err := m.Add(ctx, wildcard)
	if err != nil {
		t.Fatal(err)
	}
	txt, cname := findDelegationRecords(d)
	if txt.Name != "_petstore-challenge."+base || cname.Name != "_acme-challenge."+base || d.Records[0].Name != wildcard || d.Records[0].Type != "CNAME" {
		t.Fatalf("a wildcard's records: %+v", d.Records)
	}
	resolver.Set(t, fmt.Sprintf("%s. 0 IN TXT %q", txt.Name, txt.Value))
	resolver.Set(t, fmt.Sprintf("%s. 0 IN CNAME %s.", cname.Name, cname.Value))
	resolver.Set(t, wildcard+". 0 IN CNAME "+domaintest.CNAMETarget+".")

	if d, err = m.Verify(ctx, wildcard); err != nil || d.State != store.DomainVerified || d.Delegation == nil || !d.Delegation.Delegated {
		t.Fatalf("verify: %+v, %v", d, err)
	}
	d = waitDomain(t, db, wildcard, "the wildcard's certificate", func(d store.Domain) bool { return d.Certificate.State == store.CertIssued })
	if !slices.Equal(d.Certificate.Names, []string{wildcard}) {
		t.Fatalf("certificate names %v, want [%s]", d.Certificate.Names, wildcard)
	}
	if n := strings.Count(pebble.Log(), "Issued certificate serial"); n != 1 {
		t.Errorf("pebble issued %d certificates for the wildcard, want one", n)
	}

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pebble.IssuerRootPEM(t))
	dial := func(name string) (*x509.Certificate, error) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", tlsAddr, &tls.Config{ServerName: name, RootCAs: roots})
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0], nil
	}
	for _, name := range []string{"a." + base, "b." + base} {
		leaf, err := dial(name)
		if err != nil {
			t.Fatalf("handshake for %s: %v", name, err)
		}
		if fmt.Sprintf("%x", leaf.SerialNumber) != d.Certificate.Serial {
			t.Errorf("%s got serial %x, want the wildcard's %s", name, leaf.SerialNumber, d.Certificate.Serial)
		}
	}

	// An exact name beside it: its own records, its own certificate.
	api, err := m.Add(ctx, "api."+base)
	if err != nil {
		t.Fatal(err)
	}
	createRecords(t, resolver, api)
	if api, err = m.Verify(ctx, "api."+base); err != nil || api.State != store.DomainVerified {
		t.Fatalf("verify api: %+v, %v", api, err)
	}
	api = waitDomain(t, db, "api."+base, "the exact name's certificate", func(d store.Domain) bool { return d.Certificate.State == store.CertIssued })
	if !slices.Equal(api.Certificate.Names, []string{"api." + base}) {
		t.Errorf("the exact name's certificate is for %v", api.Certificate.Names)
	}
	domaintest.WaitFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		leaf, err := dial("api." + base)
		if err != nil {
			return err
		}
		if got := fmt.Sprintf("%x", leaf.SerialNumber); got != api.Certificate.Serial {
			return fmt.Errorf("api got serial %s, want its own %s", got, api.Certificate.Serial)
		}
		return nil
	})

	// Two labels below: no certificate valid for it, and no order.
	before := pebble.Log()
	if leaf, err := dial("x.y." + base); err == nil {
		t.Errorf("a handshake for x.y.%s succeeded with a certificate for %v", base, leaf.DNSNames)
	}
	if m.Route("x.y."+base).Decision != domains.Unknown {
		t.Error("x.y is routed")
	}
	log := pebble.Log()
	if strings.Contains(log, "x.y."+base) {
		t.Errorf("pebble was asked about x.y.%s:\n%s", base, log[len(before):])
	}
	// Two certificates in all: the wildcard's and api's.
	if n := strings.Count(log, "Issued certificate serial"); n != 2 {
		t.Errorf("pebble issued %d certificates, want 2 (the wildcard's, api's)", n)
	}
}
