package dnscheck_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
)

// TestCheckApexAddressesAsSets: an apex's A and AAAA records are judged
// together against both the --public-ip addresses and the ALIAS target's
// own A and AAAA records, so a flattened ALIAS that also brings the target's
// IPv6 address verifies even when --public-ip lists only IPv4.
func TestCheckApexAddressesAsSets(t *testing.T) {
	d := domaintest.StartDNS(t)
	c := &dnscheck.Checker{
		Resolvers: []string{d.Addr()},
		Platform:  dnscheck.Platform{CNAMETarget: "dual.platform.test", PublicIPs: []netip.Addr{publicIP}},
		Timeout:   time.Second,
	}
	d.AddA(t, c.Platform.CNAMETarget, publicIP.String())
	d.AddAAAA(t, c.Platform.CNAMETarget, "2001:db8::10")

	t.Run("flattened ALIAS with IPv4 and IPv6", func(t *testing.T) {
		d.AddA(t, "apexdual.test", publicIP.String())
		d.AddAAAA(t, "apexdual.test", "2001:db8::10")
		verified(t, check(t, c, "apexdual.test"))
	})

	t.Run("IPv6 only, from the target", func(t *testing.T) {
		d.AddAAAA(t, "apexsix.test", "2001:db8::10")
		verified(t, check(t, c, "apexsix.test"))
	})

	t.Run("the fallback records only", func(t *testing.T) {
		d.AddA(t, "apexfallback.test", publicIP.String())
		verified(t, check(t, c, "apexfallback.test"))
	})

	t.Run("an IPv6 address of someone else beside the platform's", func(t *testing.T) {
		d.AddA(t, "apexforeign6.test", publicIP.String())
		d.AddAAAA(t, "apexforeign6.test", "2001:db8::10", "2001:db8::bad")
		f := domaintest.OneFinding(t, check(t, c, "apexforeign6.test"), dnscheck.CodeApexNeedsAlias)
		domaintest.Contains(t, "message", f.Message, "2001:db8::bad")
		if strings.Contains(f.Message, "2001:db8::10") || strings.Contains(f.Message, publicIP.String()) {
			t.Errorf("message blames the platform's own addresses: %q", f.Message)
		}
	})
}

// delegatedZone is domaintest.DelegatedZone with a checker that asks it.
func delegatedZone(t *testing.T, apexAddr string) (*domaintest.DNSServer, *dnscheck.Checker) {
	auth, resolver, port := domaintest.DelegatedZone(t, apexAddr)
	return auth, &dnscheck.Checker{
		Resolvers:               []string{resolver},
		NameserverPort:          port,
		Platform:                dnscheck.Platform{CNAMETarget: target, PublicIPs: []netip.Addr{publicIP}},
		Timeout:                 time.Second,
		AllowPrivateNameservers: true,
	}
}

// TestCheckZoneApex: a subdomain with its own SOA cannot carry a CNAME, so
// it is checked as an apex: the platform's address verifies it, and another
// address asks for an ALIAS, never for a CNAME at its own zone apex.
func TestCheckZoneApex(t *testing.T) {
	_, c := delegatedZone(t, publicIP.String())
	r := check(t, c, "shop.deleg.test")
	verified(t, r)
	if !r.ZoneApex || !r.Authoritative {
		t.Errorf("zoneApex %v authoritative %v, want both", r.ZoneApex, r.Authoritative)
	}

	_, c = delegatedZone(t, "192.0.2.44")
	r = check(t, c, "shop.deleg.test")
	f := domaintest.OneFinding(t, r, dnscheck.CodeApexNeedsAlias)
	domaintest.Contains(t, "fix", f.Fix, "ALIAS", "@", target)
	if !r.ZoneApex {
		t.Error("zoneApex not set")
	}
}

// TestCheckPrivateNameservers: nameserver addresses come from the
// customer's NS records and glue, so loopback, private and link-local ones
// are not asked unless the operator allows it; the resolvers are asked
// instead.
func TestCheckPrivateNameservers(t *testing.T) {
	auth, c := delegatedZone(t, publicIP.String())
	c.AllowPrivateNameservers = false
	r := check(t, c, "shop.deleg.test")
	if got := auth.Seen(); len(got) != 0 {
		t.Errorf("the nameserver on 127.0.0.1 was asked: %v", got)
	}
	if r.Authoritative {
		t.Error("authoritative without asking the nameserver")
	}
	// The resolvers still tell the delegation: it is checked as an apex.
	if !r.ZoneApex {
		t.Error("zoneApex not found through the resolvers")
	}

	c.AllowPrivateNameservers = true
	if r := check(t, c, "shop.deleg.test"); !r.Authoritative || len(auth.Seen()) == 0 {
		t.Errorf("allowed, the nameserver was not asked: authoritative %v, queries %v", r.Authoritative, auth.Seen())
	}
}

// TestApexRecordsShowTheReadableIDN: the ALIAS note of an IDN apex names
// the Unicode form beside the punycode the provider needs.
func TestApexRecordsShowTheReadableIDN(t *testing.T) {
	for _, ips := range [][]netip.Addr{nil, {publicIP}} {
		recs := dnscheck.RequiredRecords("xn--bcher-kva.example", target, ips)
		if recs[0].Type != dnscheck.TypeALIAS {
			t.Fatalf("records %+v", recs)
		}
		domaintest.Contains(t, "note", recs[0].Note, "xn--bcher-kva.example", "bücher.example")
	}
	if recs := dnscheck.RequiredRecords("shop.example.com", target, nil); strings.Contains(recs[0].Note, "how DNS writes") {
		t.Errorf("note of an ASCII name explains punycode: %q", recs[0].Note)
	}
}
