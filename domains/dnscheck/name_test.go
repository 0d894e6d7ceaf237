package dnscheck_test

import (
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
	"petstore/store"
)

func TestNormalize(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	long := strings.Repeat(label63+".", 4) + "com" // 4*64+3 = 259
	tests := []normalizeCase{
		{in: "Shop.Example.COM", want: "shop.example.com"},
		{in: "  shop.example.com.  ", want: "shop.example.com"},
		{in: "Bücher.example", want: "xn--bcher-kva.example"},
		{in: "BÜCHER.Example", want: "xn--bcher-kva.example"},
		{in: "xn--bcher-kva.example", want: "xn--bcher-kva.example"},
		{in: "ｓｈｏｐ.example.com", want: "shop.example.com"}, // full-width letters map to ASCII
		{in: "a.b.example.co.uk", want: "a.b.example.co.uk"},
		{in: "example.com", want: "example.com"},
		{in: "my--shop.example.com", want: "my--shop.example.com"},
		{in: "foo.github.io", want: "foo.github.io"},
		{in: label63 + ".example.com", want: label63 + ".example.com"},
		{in: "shop.example.test", want: "shop.example.test"},

		{in: "", errHas: "enter a domain name"},
		{in: "   ", errHas: "enter a domain name"},
		{in: "192.0.2.1", errHas: "IP address"},
		{in: "192.0.2.1.", errHas: "IP address"},
		{in: "2001:db8::1", errHas: "IP address"},
		{in: "[2001:db8::1]", errHas: "IP address"},
		{in: "[::1]:443", errHas: "IP address"},
		{in: "１９２．０．２．１", errHas: "IP address"}, // full-width digits and dots
		{in: "https://shop.example.com", errHas: "URL"},
		{in: "shop.example.com/path", errHas: "URL"},
		{in: "shop.example.com?x=1", errHas: "URL"},
		{in: "user@example.com", errHas: "email"},
		{in: "shop.example.com:8080", errHas: "port"},
		{in: "*.example.com", errHas: "wildcard"},
		{in: "shop example.com", errHas: "spaces"},
		{in: "localhost", errHas: "single label"},
		{in: "com", errHas: "single label"},
		{in: "Bücher", errHas: "single label"},
		{in: "co.uk", errHas: "public suffix"},
		{in: "github.io", errHas: "public suffix"},
		{in: "CO.UK.", errHas: "public suffix"},
		{in: strings.Repeat("a", 64) + ".example.com", errHas: "at most 63"},
		{in: long, errHas: "limit is 253"},
		{in: "-shop.example.com", errHas: "hyphen"},
		{in: "shop-.example.com", errHas: "hyphen"},
		{in: "shop_1.example.com", errHas: "letters, digits and hyphens"},
		{in: "shop..example.com", errHas: "empty label"},
		{in: ".example.com", errHas: "empty label"},
		{in: "example.com..", errHas: "empty label"},
		{in: "1.2.3.4.5", errHas: "all digits"},
	}
	checkNormalize(t, "Normalize", dnscheck.Normalize, tests, nil)
}

// normalizeCase is a name given to a normaliser and what it must give:
// want, or, when errHas is not "", an EINVALID *store.Error whose message
// contains errHas, and no name.
type normalizeCase struct{ in, want, errHas string }

// checkNormalize runs each case through normalize, called name in the
// messages; valid, when not nil, checks each valid name further.
func checkNormalize(t *testing.T, name string, normalize func(string) (string, error), tests []normalizeCase, valid func(t *testing.T, in string)) {
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := normalize(tt.in)
			if tt.errHas == "" {
				if err != nil || got != tt.want {
					t.Fatalf("%s(%q) = %q, %v; want %q", name, tt.in, got, err, tt.want)
				}
				if valid != nil {
					valid(t, tt.in)
				}
				return
			}
			var se *store.Error
			if !errors.As(err, &se) || se.Code != store.EINVALID {
				t.Fatalf("%s(%q) = %q, %v; want a *store.Error with code %s", name, tt.in, got, err, store.EINVALID)
			}
			if !strings.Contains(se.Message, tt.errHas) {
				t.Errorf("%s(%q) message %q does not mention %q", name, tt.in, se.Message, tt.errHas)
			}
			if got != "" {
				t.Errorf("%s(%q) returned %q along with an error", name, tt.in, got)
			}
		})
	}
}

func TestIsApex(t *testing.T) {
	domaintest.CheckTable(t, "IsApex", dnscheck.IsApex, map[string]bool{
		"example.com":           true,
		"example.co.uk":         true,
		"foo.github.io":         true,
		"xn--bcher-kva.example": true,
		"example.com.":          true,
		"www.example.com":       false,
		"a.b.example.co.uk":     false,
		"bar.foo.github.io":     false,
		"co.uk":                 false,
		"":                      false,
	})
}

func TestPlatform(t *testing.T) {
	p := dnscheck.Platform{Domain: "PetStore.app.", CNAMETarget: "sites.petstore-dns.net"}
	domaintest.CheckTable(t, "Owns", p.Owns, map[string]bool{
		"petstore.app":             true,
		"shop.petstore.app":        true,
		"A.B.PETSTORE.APP.":        true,
		"sites.petstore-dns.net":   true,
		"x.sites.petstore-dns.net": true,
		"petstore-dns.net":         false,
		"notpetstore.app":          false,
		"petstore.app.example.com": false,
		"shop.example.com":         false,
	})
	if got, err := p.Normalize(" Shop.PetStore.app. "); store.ErrorCode(err) != store.EINVALID || !strings.Contains(store.ErrorMessage(err), "belongs to the platform") {
		t.Errorf("Platform.Normalize(platform subdomain) = %q, %v; want EINVALID about the platform", got, err)
	}
	if got, err := p.Normalize("Shop.Example.com"); err != nil || got != "shop.example.com" {
		t.Errorf("Platform.Normalize(customer domain) = %q, %v", got, err)
	}
	if _, err := p.Normalize("co.uk"); !strings.Contains(store.ErrorMessage(err), "public suffix") {
		t.Errorf("Platform.Normalize keeps Normalize's refusals, got %v", err)
	}
	if (dnscheck.Platform{}).Owns("example.com") {
		t.Error("an empty Platform owns nothing")
	}
}

func TestRequiredRecords(t *testing.T) {
	ips := []netip.Addr{netip.MustParseAddr("203.0.113.10"), netip.MustParseAddr("2001:db8::10"), netip.MustParseAddr("::ffff:198.51.100.7")}
	target := "Sites.PetStore-DNS.net."

	t.Run("subdomain", func(t *testing.T) {
		got := dnscheck.RequiredRecords("shop.example.com", target, ips)
		want := []dnscheck.Record{{Type: "CNAME", Host: "shop", Name: "shop.example.com", Value: "sites.petstore-dns.net", TTL: 3600}}
		if len(got) != 1 || !strings.Contains(got[0].Note, "A or AAAA") {
			t.Fatalf("got %+v", got)
		}
		got[0].Note = ""
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v\nwant %+v", got, want)
		}
	})
	t.Run("deep subdomain under co.uk", func(t *testing.T) {
		got := dnscheck.RequiredRecords("a.b.example.co.uk", target, nil)
		if len(got) != 1 || got[0].Type != "CNAME" || got[0].Host != "a.b" || got[0].Name != "a.b.example.co.uk" || got[0].Value != "sites.petstore-dns.net" || got[0].Fallback {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("apex with public IPs", func(t *testing.T) {
		got := dnscheck.RequiredRecords("example.com", target, ips)
		if len(got) != 4 {
			t.Fatalf("got %d records, want ALIAS + 3 fallbacks: %+v", len(got), got)
		}
		alias := got[0]
		if alias.Type != "ALIAS" || alias.Host != "@" || alias.Value != "sites.petstore-dns.net" || alias.Fallback || alias.TTL != 3600 ||
			!strings.Contains(alias.Note, "Not every DNS provider") || !strings.Contains(alias.Note, "A/AAAA records below") {
			t.Errorf("ALIAS record: %+v", alias)
		}
		want := []struct{ typ, value string }{{"A", "203.0.113.10"}, {"AAAA", "2001:db8::10"}, {"A", "198.51.100.7"}}
		for i, w := range want {
			r := got[i+1]
			if r.Type != w.typ || r.Value != w.value || r.Host != "@" || r.Name != "example.com" || !r.Fallback || r.TTL != 3600 || r.Note == "" {
				t.Errorf("fallback %d: %+v, want %s %s", i, r, w.typ, w.value)
			}
		}
	})
	t.Run("apex without public IPs", func(t *testing.T) {
		got := dnscheck.RequiredRecords("example.co.uk", target, nil)
		if len(got) != 1 || got[0].Type != "ALIAS" || got[0].Host != "@" || got[0].Name != "example.co.uk" {
			t.Fatalf("got %+v", got)
		}
		if !strings.Contains(got[0].Note, "Not every DNS provider") || strings.Contains(got[0].Note, "below") || !strings.Contains(got[0].Note, "www.example.co.uk") {
			t.Errorf("note should not point at fallbacks that are not there, and suggest a subdomain: %q", got[0].Note)
		}
	})
	t.Run("json", func(t *testing.T) {
		b, err := json.Marshal(dnscheck.RequiredRecords("shop.example.com", target, nil)[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{`"type":`, `"host":`, `"name":`, `"value":`, `"ttl":3600`, `"note":`, `"fallback":false`} {
			if !strings.Contains(string(b), key) {
				t.Errorf("JSON %s lacks %s", b, key)
			}
		}
	})
}
