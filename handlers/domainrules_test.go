package handlers_test

import (
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
