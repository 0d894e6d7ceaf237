package dnscheck_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
	"petstore/store"
)

func TestNormalizeWildcard(t *testing.T) {
	tests := []normalizeCase{
		{in: "*.Shop.Example.COM.", want: "*.shop.example.com"},
		{in: "  *.shop.example.com  ", want: "*.shop.example.com"},
		{in: "*.example.com", want: "*.example.com"},
		{in: "*.Bücher.example", want: "*.xn--bcher-kva.example"},
		{in: "*.foo.github.io", want: "*.foo.github.io"},

		{in: "*", errHas: "not a wildcard domain"},
		{in: "*.", errHas: "enter a domain name"},
		{in: "a*.example.com", errHas: "not a wildcard domain"},
		{in: "*a.example.com", errHas: "not a wildcard domain"},
		{in: "a.*.example.com", errHas: "not a wildcard domain"},
		{in: "*.*.example.com", errHas: "not a wildcard domain"},
		{in: "*.shop.*", errHas: "not a wildcard domain"},
		{in: "shop.example.com", errHas: "not a wildcard domain"},
		{in: "*.com", errHas: "public suffix com"},
		{in: "*.co.uk", errHas: "public suffix co.uk"},
		{in: "*.github.io", errHas: "public suffix github.io"},
		{in: "*.CO.UK.", errHas: "public suffix co.uk"},
		{in: "*.192.0.2.1", errHas: "IP address"},
		{in: "*.shop_1.example.com", errHas: "letters, digits and hyphens"},
		{in: "*.https://shop.example.com", errHas: "URL"},
		{in: "*." + strings.Repeat("a.", 125) + "com", errHas: "limit is 253"},
	}
	checkNormalize(t, "NormalizeWildcard", dnscheck.NormalizeWildcard, tests, func(t *testing.T, in string) {
		if _, err := dnscheck.Normalize(in); !strings.Contains(store.ErrorMessage(err), "wildcard") {
			t.Errorf("Normalize(%q) must refuse the wildcard, got %v", in, err)
		}
	})
}

func TestPlatformNormalizeWildcard(t *testing.T) {
	p := dnscheck.Platform{Domain: "petstore.example.com", CNAMETarget: "sites.petstore-dns.net"}
	for in, errHas := range map[string]string{
		"*.petstore.example.com":       "belongs to the platform",
		"*.shop.petstore.example.com":  "belongs to the platform",
		"*.sites.petstore-dns.net":     "belongs to the platform",
		"*.example.com":                "would cover petstore.example.com",
		"*.petstore-dns.net":           "would cover sites.petstore-dns.net",
		"*.shop.example.com":           "",
		"*.other.petstore-dns.net":     "",
		"*.notpetstore.example.com":    "",
		"*.petstore.example.com.other": "",
	} {
		got, err := p.NormalizeWildcard(in)
		switch {
		case errHas == "" && err != nil:
			t.Errorf("%s: %v", in, err)
		case errHas != "" && (store.ErrorCode(err) != store.EINVALID || !strings.Contains(store.ErrorMessage(err), errHas)):
			t.Errorf("%s = %q, %v; want an error about %q", in, got, err, errHas)
		}
	}
}

func TestWildcardNames(t *testing.T) {
	domaintest.CheckTable(t, "Covers(*.shop.example.com)", func(h string) bool { return dnscheck.Covers("*.shop.example.com", h) }, map[string]bool{
		"a.shop.example.com":      true,
		"api.shop.example.com":    true,
		"shop.example.com":        false,
		"x.y.shop.example.com":    false,
		"*.shop.example.com":      false,
		".shop.example.com":       false,
		"a.shopx.example.com":     false,
		"a.shop.example.com.evil": false,
	})
	if dnscheck.Covers("shop.example.com", "a.shop.example.com") {
		t.Error("a name that is not a wildcard covers nothing")
	}
	domaintest.CheckTable(t, "RecordName", func(n string) bool { return dnscheck.RecordName(n) == "shop.example.com" }, map[string]bool{
		"*.shop.example.com": true,
		"shop.example.com":   true,
		"SHOP.example.com.":  true,
		"a.shop.example.com": false,
	})
	got := dnscheck.RequiredRecords("*.shop.example.com", "sites.petstore-dns.net", nil)
	if len(got) != 1 || got[0].Type != "CNAME" || got[0].Host != "*.shop" || got[0].Name != "*.shop.example.com" || !strings.Contains(got[0].Note, "one label below shop.example.com") {
		t.Errorf("wildcard records: %+v", got)
	}
	if got := dnscheck.RequiredRecords("*.example.com", "sites.petstore-dns.net", nil); len(got) != 1 || got[0].Type != "CNAME" || got[0].Host != "*" {
		t.Errorf("wildcard of an apex: %+v", got)
	}
}

// TestCheckWildcard: a wildcard is verified through a name it covers, so
// only a "*" record can make it pass; a record at one name below does not.
func TestCheckWildcard(t *testing.T) {
	srv, addr := startCAAServer(t)
	target := "sites.platform.test"
	c := &dnscheck.Checker{Resolvers: []string{addr}, Platform: dnscheck.Platform{CNAMETarget: target}, Timeout: time.Second}

	srv.add(t, "www.wild1.test. CNAME "+target+".")
	r := c.Check(context.Background(), "*.wild1.test")
	if r.Verified || len(r.Findings) != 1 || r.Findings[0].Code != dnscheck.CodeNoRecord {
		t.Fatalf("with no * record: %+v", r)
	}
	f := r.Findings[0]
	domaintest.Contains(t, "finding", f.Message+" "+f.Fix, "*.wild1.test", "name * and", "petstore-probe-", "a name the wildcard covers")

	srv.add(t, "*.wild1.test. CNAME elsewhere.example.")
	r = c.Check(context.Background(), "*.wild1.test")
	if r.Verified || len(r.Findings) != 1 || r.Findings[0].Code != dnscheck.CodeCNAMEMismatch {
		t.Fatalf("with * pointing elsewhere: %+v", r)
	}
	domaintest.Contains(t, "finding", r.Findings[0].Message, "*.wild1.test", "elsewhere.example")

	srv.add(t, "*.wild2.test. CNAME "+target+".")
	if r := c.Check(context.Background(), "*.wild2.test"); !r.Verified || len(r.Findings) != 0 {
		t.Fatalf("with * pointing here: %+v", r)
	}
}
