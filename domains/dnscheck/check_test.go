package dnscheck_test

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
)

const target = "sites.platform.test"

var publicIP = netip.MustParseAddr("203.0.113.10")

// finding returns the only finding of r, which must have code.

func verified(t *testing.T, r dnscheck.Result) {
	t.Helper()
	if !r.Verified || len(r.Findings) != 0 {
		t.Fatalf("not verified: %+v", r.Findings)
	}
}

func check(t *testing.T, c *dnscheck.Checker, name string) dnscheck.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	start := time.Now()
	r := c.Check(ctx, name)
	if r.CheckedAt.Before(start.Add(-time.Second)) || r.CheckedAt.After(time.Now()) || r.CheckedAt.Location() != time.UTC {
		t.Errorf("CheckedAt %v", r.CheckedAt)
	}
	return r
}

// TestCheckChalltestsrv runs the checker against a real challtestsrv, which
// acts as the resolver: it serves no SOA/NS, so the checker falls back to it.
func TestCheckChalltestsrv(t *testing.T) {
	d := domaintest.StartDNS(t)
	c := &dnscheck.Checker{
		Resolvers:     []string{d.Addr()},
		Platform:      dnscheck.Platform{CNAMETarget: target, PublicIPs: []netip.Addr{publicIP}},
		CAAIdentities: []string{"letsencrypt.org"},
		Timeout:       time.Second,
		// challtestsrv serves no NS records today; if it did, they would
		// point at loopback.
		AllowPrivateNameservers: true,
	}

	t.Run("nothing yet", func(t *testing.T) {
		r := check(t, c, "shop.none.test")
		f := domaintest.OneFinding(t, r, dnscheck.CodeNoRecord)
		domaintest.Contains(t, "fix", f.Fix, "CNAME", "shop", target, "48 hours", "minutes")
		if f.Expected != "CNAME "+target {
			t.Errorf("expected %q", f.Expected)
		}
		if r.Authoritative {
			t.Error("challtestsrv serves no SOA/NS: the answer cannot be authoritative")
		}
	})

	t.Run("A record instead of the CNAME", func(t *testing.T) {
		d.AddA(t, "shop.arec.test", "192.0.2.1")
		f := domaintest.OneFinding(t, check(t, c, "shop.arec.test"), dnscheck.CodeConflictingRecord)
		domaintest.Contains(t, "message", f.Message, "A 192.0.2.1", "blocks the CNAME")
		domaintest.Contains(t, "fix", f.Fix, "delete", "shop", target)
		if !slices.Equal(f.Found, []string{"A 192.0.2.1"}) {
			t.Errorf("found %v", f.Found)
		}
	})

	t.Run("AAAA record instead of the CNAME", func(t *testing.T) {
		d.AddAAAA(t, "shop.aaaarec.test", "2001:db8::1")
		d.AddA(t, "shop.aaaarec.test", "192.0.2.2")
		f := domaintest.OneFinding(t, check(t, c, "shop.aaaarec.test"), dnscheck.CodeConflictingRecord)
		if !slices.Equal(f.Found, []string{"A 192.0.2.2", "AAAA 2001:db8::1"}) {
			t.Errorf("found %v", f.Found)
		}
	})

	t.Run("CNAME to another target", func(t *testing.T) {
		d.SetCNAME(t, "shop.other.test", "old-host.example.net")
		f := domaintest.OneFinding(t, check(t, c, "shop.other.test"), dnscheck.CodeCNAMEMismatch)
		domaintest.Contains(t, "message", f.Message, "old-host.example.net", target, "exactly")
		if !slices.Equal(f.Found, []string{"old-host.example.net"}) || f.Expected != target {
			t.Errorf("found %v expected %q", f.Found, f.Expected)
		}
	})

	t.Run("right CNAME", func(t *testing.T) {
		d.SetCNAME(t, "shop.ok.test", target)
		verified(t, check(t, c, "shop.ok.test"))
	})

	t.Run("right CNAME, other case and trailing dot", func(t *testing.T) {
		d.SetCNAME(t, "www.okcase.test", "Sites.Platform.TEST.")
		verified(t, check(t, c, "WWW.OkCase.test."))
	})

	t.Run("deep subdomain", func(t *testing.T) {
		d.SetCNAME(t, "a.b.deep.co.uk", target)
		verified(t, check(t, c, "a.b.deep.co.uk"))
	})

	t.Run("fixing the record shows at once", func(t *testing.T) {
		d.AddA(t, "shop.fix.test", "192.0.2.1")
		domaintest.OneFinding(t, check(t, c, "shop.fix.test"), dnscheck.CodeConflictingRecord)
		d.Clear(t, domaintest.A, "shop.fix.test")
		d.SetCNAME(t, "shop.fix.test", target)
		verified(t, check(t, c, "shop.fix.test"))
	})

	t.Run("CAA on the parent blocks the CA", func(t *testing.T) {
		d.SetCNAME(t, "shop.caa.test", target)
		d.AddCAA(t, "caa.test", "issue", "other-ca.example")
		f := domaintest.OneFinding(t, check(t, c, "shop.caa.test"), dnscheck.CodeCAABlocksCA)
		domaintest.Contains(t, "message", f.Message, "caa.test", "other-ca.example", "letsencrypt.org")
		domaintest.Contains(t, "fix", f.Fix, `caa.test CAA 0 issue "letsencrypt.org"`)
		if !slices.Equal(f.Found, []string{`caa.test CAA 0 issue "other-ca.example"`}) {
			t.Errorf("found %v", f.Found)
		}

		// A CAA record for the platform's CA beside it lets it issue.
		d.AddCAA(t, "caa.test", "issue", "letsencrypt.org")
		verified(t, check(t, c, "shop.caa.test"))

		// The same records with a CA not named anywhere block.
		other := *c
		other.CAAIdentities = []string{"pki.goog"}
		f = domaintest.OneFinding(t, check(t, &other, "shop.caa.test"), dnscheck.CodeCAABlocksCA)
		domaintest.Contains(t, "message", f.Message, "other-ca.example, letsencrypt.org", "pki.goog")
	})

	for _, tc := range []struct {
		test, name string
		caa        [][3]string // owner, tag, value
		// blockedBecause is what the CAA finding's message says; "" when
		// the name is verified.
		blockedBecause string
	}{
		{"CAA for the platform's CA", "shop.caaok.test",
			[][3]string{{"caaok.test", "issue", "letsencrypt.org; validationmethods=http-01"}}, ""},
		{"CAA issue with no CA forbids all", "shop.caanone.test",
			[][3]string{{"caanone.test", "issue", ";"}, {"caanone.test", "issuewild", "letsencrypt.org"}}, "forbid every certificate authority"},
		{"CAA issuewild and iodef only do not restrict a plain name", "shop.caawild.test",
			[][3]string{{"caawild.test", "issuewild", "other-ca.example"}, {"caawild.test", "iodef", "mailto:security@caawild.test"}}, ""},
		{"CAA: the closest RRset is the relevant one", "a.b.caaclimb.test",
			[][3]string{{"caaclimb.test", "issue", "other-ca.example"}, {"b.caaclimb.test", "issue", "letsencrypt.org"}}, ""},
	} {
		t.Run(tc.test, func(t *testing.T) {
			d.SetCNAME(t, tc.name, target)
			for _, rr := range tc.caa {
				d.AddCAA(t, rr[0], rr[1], rr[2])
			}
			r := check(t, c, tc.name)
			if tc.blockedBecause == "" {
				verified(t, r)
				return
			}
			f := domaintest.OneFinding(t, r, dnscheck.CodeCAABlocksCA)
			domaintest.Contains(t, "message", f.Message, tc.blockedBecause)
		})
	}

	t.Run("CAA at the alias target counts", func(t *testing.T) {
		// RFC 8659 looks CAA up following aliases: the target's CAA is the
		// name's own when the name has a CNAME.
		aliased := *c
		aliased.Platform.CNAMETarget = "caa-target.platform.test"
		d.SetCNAME(t, "shop.caaalias.test", aliased.Platform.CNAMETarget)
		d.AddCAA(t, aliased.Platform.CNAMETarget, "issue", "other-ca.example")
		f := domaintest.OneFinding(t, check(t, &aliased, "shop.caaalias.test"), dnscheck.CodeCAABlocksCA)
		domaintest.Contains(t, "message", f.Message, aliased.Platform.CNAMETarget)
	})

	t.Run("CAA only warns without identities", func(t *testing.T) {
		noCA := *c
		noCA.CAAIdentities = nil
		d.SetCNAME(t, "shop.caaoff.test", target)
		d.AddCAA(t, "caaoff.test", "issue", "other-ca.example")
		r := check(t, &noCA, "shop.caaoff.test")
		if !r.Verified || len(r.Findings) != 1 || r.Findings[0].Code != dnscheck.CodeCAAUnchecked || !r.Findings[0].Warning {
			t.Fatalf("want verified with a %s warning, got %v %+v", dnscheck.CodeCAAUnchecked, r.Verified, r.Findings)
		}
		domaintest.OneFinding(t, check(t, c, "shop.caaoff.test"), dnscheck.CodeCAABlocksCA)
	})

	t.Run("apex with the platform's address", func(t *testing.T) {
		d.AddA(t, "apexok.test", publicIP.String())
		verified(t, check(t, c, "apexok.test"))
	})

	t.Run("apex with another address", func(t *testing.T) {
		d.AddA(t, "apexother.test", "192.0.2.7")
		f := domaintest.OneFinding(t, check(t, c, "apexother.test"), dnscheck.CodeApexNeedsAlias)
		domaintest.Contains(t, "message", f.Message, "192.0.2.7")
		domaintest.Contains(t, "fix", f.Fix, "ALIAS", "ANAME", target, publicIP.String())
		if !slices.Equal(f.Found, []string{"A 192.0.2.7"}) {
			t.Errorf("found %v", f.Found)
		}
	})

	t.Run("apex with the platform's address and another", func(t *testing.T) {
		d.AddA(t, "apexmixed.test", publicIP.String(), "192.0.2.8")
		f := domaintest.OneFinding(t, check(t, c, "apexmixed.test"), dnscheck.CodeApexNeedsAlias)
		domaintest.Contains(t, "message", f.Message, "192.0.2.8")
		if strings.Contains(f.Message, publicIP.String()) {
			t.Errorf("message blames the platform's own address: %q", f.Message)
		}
	})

	t.Run("apex with nothing", func(t *testing.T) {
		f := domaintest.OneFinding(t, check(t, c, "apexnone.test"), dnscheck.CodeNoRecord)
		domaintest.Contains(t, "fix", f.Fix, "ALIAS", target, "48 hours")
	})

	t.Run("apex CNAME elsewhere", func(t *testing.T) {
		d.SetCNAME(t, "apexcname.test", "old-host.example.net")
		f := domaintest.OneFinding(t, check(t, c, "apexcname.test"), dnscheck.CodeCNAMEMismatch)
		domaintest.Contains(t, "message", f.Message, "old-host.example.net", target)
	})

	t.Run("apex and CAA", func(t *testing.T) {
		d.AddA(t, "apexcaa.test", publicIP.String())
		d.AddCAA(t, "apexcaa.test", "issue", "other-ca.example")
		domaintest.OneFinding(t, check(t, c, "apexcaa.test"), dnscheck.CodeCAABlocksCA)
	})

	t.Run("apex flattened, no public IPs configured", func(t *testing.T) {
		flat := *c
		flat.Platform.PublicIPs = nil
		flat.Platform.CNAMETarget = "flat.platform.test"
		d.AddA(t, "flat.platform.test", "198.51.100.5")
		d.AddAAAA(t, "flat.platform.test", "2001:db8::5")
		d.AddA(t, "apexflat.test", "198.51.100.5")
		d.AddAAAA(t, "apexflat.test", "2001:db8::5")
		verified(t, check(t, &flat, "apexflat.test"))

		d.AddA(t, "apexnoflat.test", "192.0.2.7")
		f := domaintest.OneFinding(t, check(t, &flat, "apexnoflat.test"), dnscheck.CodeApexNeedsAlias)
		domaintest.Contains(t, "fix", f.Fix, "flat.platform.test", "subdomain")
	})

	t.Run("SERVFAIL", func(t *testing.T) {
		d.SetServfail(t, "shop.fail.test")
		f := domaintest.OneFinding(t, check(t, c, "shop.fail.test"), dnscheck.CodeDNSError)
		domaintest.Contains(t, "message", f.Message, "shop.fail.test", "SERVFAIL")
		domaintest.Contains(t, "fix", f.Fix, "try again")
		d.Clear(t, domaintest.Servfail, "shop.fail.test")
		domaintest.OneFinding(t, check(t, c, "shop.fail.test"), dnscheck.CodeNoRecord)
	})

	t.Run("SERVFAIL on CAA lookup", func(t *testing.T) {
		d.SetCNAME(t, "shop.caafail.test", target)
		d.SetServfail(t, "caafail.test")
		f := domaintest.OneFinding(t, check(t, c, "shop.caafail.test"), dnscheck.CodeDNSError)
		domaintest.Contains(t, "message", f.Message, "caafail.test", "CAA")
	})

	t.Run("result JSON", func(t *testing.T) {
		b, err := json.Marshal(check(t, c, "shop.none.test"))
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{`"verified":false`, `"checkedAt":`, `"authoritative":false`, `"findings":[{"code":"no_record","message":`, `"fix":`, `"expected":`} {
			domaintest.Contains(t, "JSON", string(b), key)
		}
		b, _ = json.Marshal(check(t, c, "shop.ok.test"))
		domaintest.Contains(t, "JSON", string(b), `"verified":true`, `"findings":[]`)
	})
}

func TestCheckUnreachableResolver(t *testing.T) {
	// A UDP port with nothing behind it: the kernel refuses at once.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	c := &dnscheck.Checker{Resolvers: []string{addr}, Platform: dnscheck.Platform{CNAMETarget: target}, Timeout: 500 * time.Millisecond}
	start := time.Now()
	f := domaintest.OneFinding(t, check(t, c, "shop.example.test"), dnscheck.CodeDNSError)
	domaintest.Contains(t, "fix", f.Fix, "try again")
	if len(f.Found) == 0 || !strings.Contains(strings.Join(f.Found, " "), addr) {
		t.Errorf("found %v should name the server", f.Found)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := c.Check(ctx, "shop.example.test")
	f = domaintest.OneFinding(t, r, dnscheck.CodeDNSError)
	domaintest.Contains(t, "message", f.Message, "cancelled")
}

// TestCheckAuthoritative has a resolver with a stale view of a zone and the
// zone's own nameserver with the fresh one: the checker must find and ask
// the nameserver (recursion off), and fall back to the resolver when the
// nameserver does not answer.
func TestCheckAuthoritative(t *testing.T) {
	soa := "auth.test. 3600 IN SOA ns1.auth.test. hostmaster.auth.test. 1 3600 600 86400 60"
	auth, authAddr := domaintest.NewZone(t, "auth.test.",
		soa,
		"auth.test. 3600 IN NS ns1.auth.test.",
		"ns1.auth.test. 3600 IN A 127.0.0.1",
		"auth.test. 3600 IN CAA 0 issue \"letsencrypt.org\"",
		"shop.auth.test. 3600 IN CNAME "+target+".",
		// A broken zone: an address beside the CNAME.
		"both.auth.test. 3600 IN CNAME "+target+".",
		"both.auth.test. 3600 IN A 192.0.2.9",
		// A CAA blocking at a sub-name, with the right CNAME below it.
		"blocked.auth.test. 3600 IN CAA 0 issue \"other-ca.example\"",
		"www.blocked.auth.test. 3600 IN CNAME "+target+".",
		// An unknown critical property.
		"crit.auth.test. 3600 IN CAA 128 tbs \"unknown\"",
		"www.crit.auth.test. 3600 IN CNAME "+target+".",
	)
	_, resolverAddr := domaintest.NewZone(t, "",
		soa,
		"auth.test. 3600 IN NS ns1.auth.test.",
		"ns1.auth.test. 3600 IN A 127.0.0.1",
		// What the resolver still caches: the record before the fix.
		"shop.auth.test. 3600 IN CNAME old-host.example.net.",
	)
	_, authPort, _ := net.SplitHostPort(authAddr)
	port := 0
	for _, ch := range authPort {
		port = port*10 + int(ch-'0')
	}
	c := &dnscheck.Checker{
		Resolvers:      []string{resolverAddr},
		NameserverPort: port,
		Platform:       dnscheck.Platform{CNAMETarget: target},
		CAAIdentities:  []string{"letsencrypt.org"},
		Timeout:        time.Second,
		// The zone's nameserver is on loopback.
		AllowPrivateNameservers: true,
	}

	r := check(t, c, "shop.auth.test")
	verified(t, r)
	if !r.Authoritative || !slices.Equal(r.Nameservers, []string{"ns1.auth.test"}) {
		t.Errorf("authoritative %v nameservers %v", r.Authoritative, r.Nameservers)
	}
	for _, q := range auth.Seen() {
		if strings.HasSuffix(q, " rd") {
			t.Errorf("asked the zone's nameserver with recursion desired: %s", q)
		}
	}
	if !slices.Contains(auth.Seen(), "shop.auth.test. CNAME nord") {
		t.Errorf("the nameserver was not asked for the CNAME: %v", auth.Seen())
	}

	f := domaintest.OneFinding(t, check(t, c, "both.auth.test"), dnscheck.CodeConflictingRecord)
	domaintest.Contains(t, "message", f.Message, "A 192.0.2.9", "beside")

	f = domaintest.OneFinding(t, check(t, c, "www.blocked.auth.test"), dnscheck.CodeCAABlocksCA)
	domaintest.Contains(t, "message", f.Message, "blocked.auth.test", "other-ca.example")

	f = domaintest.OneFinding(t, check(t, c, "www.crit.auth.test"), dnscheck.CodeCAABlocksCA)
	domaintest.Contains(t, "message", f.Message, "tbs", "critical")

	// The nameserver unreachable: the resolver's stale answer, said so.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := pc.LocalAddr().(*net.UDPAddr).Port
	pc.Close()
	fallback := *c
	fallback.NameserverPort = deadPort
	r = check(t, &fallback, "shop.auth.test")
	f = domaintest.OneFinding(t, r, dnscheck.CodeCNAMEMismatch)
	domaintest.Contains(t, "message", f.Message, "old-host.example.net")
	if r.Authoritative || r.Nameservers != nil {
		t.Errorf("fallback answer marked authoritative: %v %v", r.Authoritative, r.Nameservers)
	}
}
