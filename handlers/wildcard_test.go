package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/domains"
	"petstore/domains/dnscheck"
	"petstore/store"
)

// wildcardServer is a test server whose service answers an ACME DNS zone,
// so that wildcards may be added; DNS is a closed port.
func wildcardServer(t *testing.T, zone string) *testServer {
	return newTestServer(t, withDomains(t, domains.Config{
		Platform:      dnscheck.Platform{CNAMETarget: "cname.petstore.test"},
		Checker:       &dnscheck.Checker{Resolvers: []string{"127.0.0.1:9"}, Timeout: 100 * time.Millisecond},
		AllowTestTLDs: true,
		ACMEDNSZone:   zone,
	}))
}

// TestWildcardDomainWithoutZone: without --acme-dns-zone a wildcard is a
// 409 whose message names the flag, and nothing is stored.
func TestWildcardDomainWithoutZone(t *testing.T) {
	ts := wildcardServer(t, "")
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)
	msg := ts.adminDo("POST", "/admin/domains", `{"name":"*.shop.example.com"}`).wantError(409, store.ENOACMEDNSZONE).message()
	if !strings.Contains(msg, "--acme-dns-zone") || !strings.Contains(msg, "*.shop.example.com") {
		t.Errorf("message %q does not name the flag and the domain", msg)
	}
	if ds, _ := ts.db.Domains(context.Background()); len(ds) != 0 {
		t.Errorf("stored: %+v", ds)
	}
	ts.adminDo("GET", "/admin/domains/*.shop.example.com", "").wantError(404, "not_found")
}

// TestWildcardDomainAPI drives a wildcard through the real stack: added,
// read, verified and removed at /admin/domains/*.shop.example.com with the
// "*" as is or as %2A; served for the names one label below its base once
// verified, and for nothing deeper; gone for all of them once removed.
func TestWildcardDomainAPI(t *testing.T) {
	ts := wildcardServer(t, "acme.petstore.test")
	ctx := context.Background()
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)

	for body, mention := range map[string]string{
		`{"name":"a.*.shop.test"}`: "whole first label",
		`{"name":"*.*.shop.test"}`: "whole first label",
		`{"name":"*.co.uk"}`:       "public suffix co.uk",
		`{"name":"*.com"}`:         "public suffix com",
	} {
		if msg := ts.adminDo("POST", "/admin/domains", body).wantError(400, "invalid_request").message(); !strings.Contains(msg, mention) {
			t.Errorf("%s: %q does not mention %q", body, msg, mention)
		}
	}

	var d store.Domain
	res := ts.adminDo("POST", "/admin/domains", `{"name":"*.Shop.Customer.test"}`).wantStatus(201)
	res.decode(&d)
	if d.Name != "*.shop.customer.test" || d.State != store.DomainPending {
		t.Fatalf("added %+v", d)
	}
	if loc := res.header.Get("Location"); loc != "/admin/domains/*.shop.customer.test" {
		t.Errorf("Location %q", loc)
	}
	if len(d.Records) == 0 || d.Records[0].Type != "CNAME" || d.Records[0].Name != "*.shop.customer.test" || d.Records[0].Value != "cname.petstore.test" {
		t.Errorf("records %+v", d.Records)
	}
	ts.adminDo("POST", "/admin/domains", `{"name":"*.shop.customer.test."}`).wantError(409, store.EDOMAINEXISTS)

	for _, path := range []string{"/admin/domains/*.shop.customer.test", "/admin/domains/%2A.shop.customer.test", "/admin/domains/%2a.SHOP.customer.test."} {
		var got store.Domain
		ts.adminDo("GET", path, "").wantStatus(200).decode(&got)
		if got.Name != "*.shop.customer.test" {
			t.Errorf("GET %s: %q", path, got.Name)
		}
	}
	ts.adminDo("GET", "/admin/domains/a.shop.customer.test", "").wantError(404, "not_found")
	// The check runs (and fails: no DNS here) through either spelling.
	var checked store.Domain
	ts.adminDo("POST", "/admin/domains/%2A.shop.customer.test/verify", "").wantStatus(200).decode(&checked)
	if checked.Check == nil || checked.State != store.DomainPending {
		t.Errorf("verify: %+v", checked)
	}

	// Not served while pending.
	ts.send("GET", "/pets", "", http.Header{"Host": {"a.shop.customer.test"}}).wantError(421, "unknown_host")
	if _, err := ts.db.UpdateDomain(ctx, "*.shop.customer.test", func(d *store.Domain) error { d.State = store.DomainVerified; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := ts.srv.RefreshDomains(ctx); err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"a.shop.customer.test", "B.shop.customer.test:443"} {
		ts.send("GET", "/pets", "", http.Header{"Host": {host}}).wantStatus(200)
	}
	for _, host := range []string{"x.y.shop.customer.test", "shop.customer.test", "*.shop.customer.test"} {
		ts.send("GET", "/pets", "", http.Header{"Host": {host}}).wantError(421, "unknown_host")
	}
	// A covered name is a customer domain: no admin API there.
	ts.beforeOperations().send("GET", "/admin/project", "", http.Header{"Host": {"a.shop.customer.test"}, "Authorization": {"Bearer " + ts.admin}}).wantError(404, "not_found")

	// Redirects name single hosts.
	ts.verifiedDomain("www.customer.test")
	for body, mention := range map[string]string{
		`{"domains":{"redirects":[{"from":"*.shop.customer.test","to":"www.customer.test"}]}}`: "domains.redirects[0].from: *.shop.customer.test is a wildcard",
		`{"domains":{"redirects":[{"from":"www.customer.test","to":"*.shop.customer.test"}]}}`: "domains.redirects[0].to: *.shop.customer.test is a wildcard",
		`{"domains":{"primary":"*.shop.customer.test"}}`:                                       "domains.primary: *.shop.customer.test is a wildcard",
	} {
		if msg := ts.adminDo("PUT", "/admin/settings", body).wantError(400, "invalid_request").message(); !strings.Contains(msg, mention) {
			t.Errorf("%s: %q does not mention %q", body, msg, mention)
		}
	}

	ts.adminDo("DELETE", "/admin/domains/%2A.shop.customer.test", "").wantStatus(204)
	ts.adminDo("GET", "/admin/domains/*.shop.customer.test", "").wantError(404, "not_found")
	ts.adminDo("DELETE", "/admin/domains/*.shop.customer.test", "").wantError(404, "not_found")
	for _, host := range []string{"a.shop.customer.test", "b.shop.customer.test"} {
		ts.send("GET", "/pets", "", http.Header{"Host": {host}}).wantError(421, "unknown_host")
	}
	ts.send("GET", "/pets", "", http.Header{"Host": {"www.customer.test"}}).wantStatus(200)
}
