package domains_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"petstore/domains"
	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/boltstore"
)

// deployedStore is a fresh store whose project can have custom domains:
// plan pro, one successful deploy.
func deployedStore(t *testing.T) *boltstore.DB {
	t.Helper()
	db := domaintest.OpenStore(t)
	ctx := context.Background()
	if _, err := db.UpdateProject(ctx, func(p *store.Project) error { p.Plan = store.PlanPro; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RecordDeploy(ctx, store.Deploy{Version: "1.0.0", Status: "succeeded"}); err != nil {
		t.Fatal(err)
	}
	return db
}

// managerWith builds a manager on a fresh store (plan pro, one successful
// deploy) from cfg, which gets the store.
func managerWith(t *testing.T, cfg domains.Config) *domains.Manager {
	t.Helper()
	cfg.Store = deployedStore(t)
	if cfg.Checker == nil {
		cfg.Checker = &dnscheck.Checker{}
	}
	return domaintest.NewManager(t, cfg)
}

func wantCode(t *testing.T, err error, code string, mentions ...string) {
	t.Helper()
	var appErr *store.Error
	if !errors.As(err, &appErr) || appErr.Code != code {
		t.Fatalf("got %v, want %s", err, code)
	}
	for _, m := range mentions {
		if !strings.Contains(appErr.Message, m) {
			t.Errorf("message %q does not mention %q", appErr.Message, m)
		}
	}
}

// TestAddRefusesSpecialUseNames: names under special-use top-level domains,
// and under any TLD outside the ICANN section of the public suffix list,
// can never get a public certificate, so they are refused when added;
// .test is let through only with AllowTestTLDs.
func TestAddRefusesSpecialUseNames(t *testing.T) {
	platform := dnscheck.Platform{Domain: "petstore.app", CNAMETarget: "cname.petstore.app"}
	strict := managerWith(t, domains.Config{Platform: platform})
	ctx := context.Background()
	for _, refused := range []struct{ name, mention string }{
		{"shop.localhost", ".localhost"},
		{"shop.invalid", ".invalid"},
		{"shop.example", ".example"},
		{"printer.local", ".local"},
		{"duckduck.onion", ".onion"},
		{"wiki.corp.internal", ".internal"},
		{"name.alt", ".alt"},
		{"shop.test", ".test"},
		{"shop.zz", "not a top-level domain"},
		{"4.3.2.in-addr.arpa", ".arpa"},
	} {
		_, err := strict.Add(ctx, refused.name)
		wantCode(t, err, store.EINVALID, refused.name, refused.mention)
	}
	for _, name := range []string{"shop.example.com", "me.blogspot.com", "xn--bcher-kva.de"} {
		if _, err := strict.Add(ctx, name); err != nil {
			t.Errorf("adding %s: %v", name, err)
		}
	}

	tests := managerWith(t, domains.Config{Platform: platform, AllowTestTLDs: true})
	if _, err := tests.Add(ctx, "shop.test"); err != nil {
		t.Errorf("with AllowTestTLDs, adding shop.test: %v", err)
	}
	_, err := tests.Add(ctx, "shop.invalid")
	wantCode(t, err, store.EINVALID, ".invalid")
}

// TestAddWithoutCNAMETarget: with no platform domain and no CNAME target
// there is nothing to tell the customer to point at, so adding is refused
// with a code of its own that names the flags.
func TestAddWithoutCNAMETarget(t *testing.T) {
	m := managerWith(t, domains.Config{})
	if got := m.CNAMETarget(); got != "" {
		t.Errorf("CNAMETarget %q without a target", got)
	}
	_, err := m.Add(context.Background(), "shop.example.com")
	wantCode(t, err, store.ENOCNAMETARGET, "--domain", "--cname-target")
	if ds, _ := m.List(context.Background()); len(ds) != 0 {
		t.Errorf("a domain was stored: %+v", ds)
	}
}

// TestVerifyZoneApexSwitchesRecords: a domain added as a subdomain (CNAME)
// that the check finds to be a zone of its own becomes an apex, and its
// records ask for an ALIAS at @ of that zone.
func TestVerifyZoneApexSwitchesRecords(t *testing.T) {
	const target = "sites.platform.test"
	publicIP := netip.MustParseAddr("203.0.113.10")
	_, resolver, port := domaintest.DelegatedZone(t, publicIP.String())
	m := managerWith(t, domains.Config{
		Platform: dnscheck.Platform{Domain: "petstore.app", CNAMETarget: target, PublicIPs: []netip.Addr{publicIP}},
		Checker: &dnscheck.Checker{
			Resolvers: []string{resolver}, NameserverPort: port, Timeout: time.Second, AllowPrivateNameservers: true,
		},
		AllowTestTLDs: true,
	})
	ctx := context.Background()
	d, err := m.Add(ctx, "shop.deleg.test")
	if err != nil {
		t.Fatal(err)
	}
	if d.Apex || d.Records[0].Type != dnscheck.TypeCNAME {
		t.Fatalf("added as %+v", d)
	}
	if d, err = m.Verify(ctx, "shop.deleg.test"); err != nil {
		t.Fatal(err)
	}
	if d.State != store.DomainVerified || !d.Apex || d.Records[0].Type != dnscheck.TypeALIAS || d.Records[0].Host != "@" {
		t.Errorf("after verify: state %s apex %v records %+v", d.State, d.Apex, d.Records)
	}
	if got, _ := m.Get(ctx, "shop.deleg.test"); !got.Apex || got.Records[0].Type != dnscheck.TypeALIAS {
		t.Errorf("stored: apex %v records %+v", got.Apex, got.Records)
	}
}
