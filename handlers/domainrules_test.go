package handlers_test

import (
	"time"

	"context"
	"strings"
	"testing"

	"petstore/domains"
	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
	"petstore/store"
)

// TestSettingsNeedVerifiedDomains: a redirect target and the primary domain
// must be verified domains or the default address, so that no visitor is
// sent (and no browser caches a 301) to a name without a certificate. The
// 400 names the field.
func TestSettingsNeedVerifiedDomains(t *testing.T) {
	ts := newTestServer(t)
	ts.verifiedDomain("live.example.com")
	ts.adminDo("POST", "/admin/domains", `{"name":"pending.example.com"}`).wantStatus(201)

	for _, bad := range []struct{ body, mentions string }{
		{`{"domains":{"redirects":[{"from":"live.example.com","to":"pending.example.com"}]}}`, "domains.redirects[0].to: pending.example.com is pending"},
		{`{"domains":{"primary":"pending.example.com"}}`, "domains.primary: pending.example.com is pending"},
	} {
		if msg := ts.adminDo("PUT", "/admin/settings", bad.body).wantError(400, "invalid_request").message(); !strings.Contains(msg, bad.mentions) {
			t.Errorf("refusal %q does not mention %q", msg, bad.mentions)
		}
	}
	if got, _ := ts.db.Settings(context.Background()); len(got.Domains.Redirects) != 0 || got.Domains.Primary != "" {
		t.Errorf("a refused PUT changed the settings: %+v", got)
	}

	// A pending domain may still redirect to a verified one or to the
	// default address, also through another pending redirect source: where
	// the flattened chain lands is what counts.
	ts.adminDo("POST", "/admin/domains", `{"name":"older.example.com"}`).wantStatus(201)
	var saved store.Settings
	ts.adminDo("PUT", "/admin/settings", `{"domains":{"primary":"live.example.com","redirects":[
		{"from":"older.example.com","to":"pending.example.com"},
		{"from":"pending.example.com","to":"live.example.com"}]}}`).wantStatus(200).decode(&saved)
	if r := saved.Domains.Redirects; len(r) != 2 || r[0].To != "live.example.com" || r[1].To != "live.example.com" {
		t.Errorf("saved %+v", saved.Domains)
	}
	ts.adminDo("PUT", "/admin/settings", `{"domains":{"primary":"localhost","redirects":[{"from":"pending.example.com","to":"localhost"}]}}`).wantStatus(200)
}

// TestAddDomainSpecialUseNames: names that no public CA certifies are
// refused with 400 over the API; .test only because the test server passes
// AllowTestTLDs, as --allow-test-tlds does.
func TestAddDomainSpecialUseNames(t *testing.T) {
	ts := newTestServer(t)
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)
	for _, name := range []string{"shop.localhost", "x.invalid", "docs.example", "printer.local", "abc.onion", "wiki.internal", "name.alt", "shop.zz"} {
		if msg := ts.adminDo("POST", "/admin/domains", `{"name":"`+name+`"}`).wantError(400, "invalid_request").message(); !strings.Contains(msg, name) {
			t.Errorf("refusal of %s: %q", name, msg)
		}
	}
	ts.adminDo("POST", "/admin/domains", `{"name":"shop.test"}`).wantStatus(201)

	// An IDN apex: the ALIAS note shows the readable name beside the
	// punycode the provider needs.
	var idn store.Domain
	ts.adminDo("POST", "/admin/domains", `{"name":"Bücher.de"}`).wantStatus(201).decode(&idn)
	if !idn.Apex || len(idn.Records) == 0 || !strings.Contains(idn.Records[0].Note, "xn--bcher-kva.de is how DNS writes bücher.de") {
		t.Errorf("IDN apex records %+v", idn.Records)
	}
}

// TestAddDomainWithoutCNAMETarget: in development (no --domain, no
// --cname-target) the project answer says no target is known and adding a
// domain is refused with cname_target_unknown, instead of records with an
// empty value.
func TestAddDomainWithoutCNAMETarget(t *testing.T) {
	ts := newTestServer(t, withDomains(t, domains.Config{Checker: &dnscheck.Checker{}}))
	var p struct{ CNAMETarget *string }
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200).decode(&p)
	if p.CNAMETarget == nil || *p.CNAMETarget != "" {
		t.Errorf("cnameTarget %v, want present and empty", p.CNAMETarget)
	}
	msg := ts.adminDo("POST", "/admin/domains", `{"name":"shop.example.com"}`).wantError(409, store.ENOCNAMETARGET).message()
	for _, flag := range []string{"--domain", "--cname-target"} {
		if !strings.Contains(msg, flag) {
			t.Errorf("message %q does not name %s", msg, flag)
		}
	}
	ts.adminDo("GET", "/admin/domains/shop.example.com", "").wantError(404, "not_found")

	withTarget := newTestServer(t)
	withTarget.adminDo("GET", "/admin/project", "").wantStatus(200).decode(&p)
	if p.CNAMETarget == nil || *p.CNAMETarget != domaintest.CNAMETarget {
		t.Errorf("cnameTarget %v, want %s", p.CNAMETarget, domaintest.CNAMETarget)
	}
}

// TestAddWithACMEDNSZoneShowsTheRecordsOfAMove: with --acme-dns-zone the
// 201 answer lists, beside the CNAME that points the domain here, the
// ownership TXT (the token) and the _acme-challenge CNAME (one label plus
// the zone), each with its full name and a sentence on why; the token and
// label stay as they are. Without the zone, only the CNAME, as before.
func TestAddWithACMEDNSZoneShowsTheRecordsOfAMove(t *testing.T) {
	ts := newTestServer(t, withDomains(t, domains.Config{
		Platform:    dnscheck.Platform{CNAMETarget: domaintest.CNAMETarget},
		Checker:     &dnscheck.Checker{Resolvers: []string{"127.0.0.1:9"}, Timeout: 100 * time.Millisecond},
		ACMEDNSZone: "acme.plat.test",
	}))
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)
	var added store.Domain
	ts.adminDo("POST", "/admin/domains", `{"name":"shop.example.com"}`).wantStatus(201).decode(&added)
	byPurpose := map[string]store.DNSRecord{}
	for _, r := range added.Records {
		byPurpose[r.Purpose] = r
	}
	txt, cname, traffic := byPurpose["ownership"], byPurpose["delegation"], byPurpose[""]
	if len(added.Records) != 3 || traffic.Type != "CNAME" || traffic.Value != domaintest.CNAMETarget {
		t.Fatalf("records %+v", added.Records)
	}
	if txt.Type != "TXT" || txt.Name != "_petstore-challenge.shop.example.com" || txt.Host != "_petstore-challenge.shop" || len(txt.Value) < 20 || txt.Note == "" {
		t.Errorf("ownership record %+v", txt)
	}
	label, ok := strings.CutSuffix(cname.Value, ".acme.plat.test")
	if cname.Type != "CNAME" || cname.Name != "_acme-challenge.shop.example.com" || !ok || label == "" || strings.Contains(label, ".") || cname.Note == "" {
		t.Errorf("delegation record %+v", cname)
	}
	if added.Delegation == nil || added.Delegation.Token != txt.Value || added.Delegation.Target != cname.Value || added.Delegation.Label != label {
		t.Errorf("delegation %+v", added.Delegation)
	}
	// Stable: a failed verify keeps them; another domain gets its own.
	var got store.Domain
	ts.adminDo("POST", "/admin/domains/shop.example.com/verify", "").wantStatus(200).decode(&got)
	if got.State != store.DomainPending || *got.Delegation != (store.Delegation{Token: txt.Value, Target: cname.Value, Label: label}) {
		t.Errorf("after a verify that reached no DNS: %s %+v", got.State, got.Delegation)
	}
	var other store.Domain
	ts.adminDo("POST", "/admin/domains", `{"name":"www.example.com"}`).wantStatus(201).decode(&other)
	if other.Delegation == nil || other.Delegation.Label == label || other.Delegation.Token == txt.Value {
		t.Errorf("a second domain's delegation %+v, the first's %+v", other.Delegation, added.Delegation)
	}

	plain := newTestServer(t)
	plain.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)
	var withoutZone store.Domain
	plain.adminDo("POST", "/admin/domains", `{"name":"shop.example.com"}`).wantStatus(201).decode(&withoutZone)
	if len(withoutZone.Records) != 1 || withoutZone.Records[0].Purpose != "" || withoutZone.Delegation != nil {
		t.Errorf("without the zone: %+v, %+v", withoutZone.Records, withoutZone.Delegation)
	}
}
