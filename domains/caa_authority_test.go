package domains_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"petstore/domains"
	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
	"petstore/store"
)

// TestCAAFromTheCA: with no --acme-caa-identity, the CAA check takes the
// CA's identities from its directory's meta.caaIdentities (Pebble announces
// pebble.letsencrypt.org), and the account URI from the account certmagic
// registered, so records bound to an account are judged against the real
// one.
func TestCAAFromTheCA(t *testing.T) {
	if testing.Short() {
		t.Skip("starts pebble and challtestsrv")
	}
	dns := domaintest.StartDNS(t)
	pebble := domaintest.StartPebble(t, dns, domaintest.PebbleOptions{})
	db := deployedStore(t)
	ctx := context.Background()
	const cname = "cname.petstore.test"
	m := domaintest.NewManager(t, domains.Config{
		Store:    db,
		Platform: dnscheck.Platform{Domain: "petstore.test", CNAMETarget: cname},
		Checker:  &dnscheck.Checker{Resolvers: []string{dns.Addr()}, Timeout: time.Second},
		// Nothing answers the challenges: orders fail, but the account is
		// registered before the first order is placed.
		ACME: &domains.ACME{
			CA: pebble.DirectoryURL(), TrustedRoots: pebble.RootsPool(), Profile: "default", Email: "Ops@Petstore.test",
			HTTPPort: pebble.HTTPPort, TLSPort: pebble.TLSPort,
		},
	})
	verify := func(name string) store.Domain {
		t.Helper()
		d, err := m.Verify(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	attach := func(name string, caa ...string) {
		t.Helper()
		if _, err := m.Add(ctx, name); err != nil {
			t.Fatal(err)
		}
		dns.SetCNAME(t, name, cname)
		_, parent, _ := strings.Cut(name, ".")
		for _, v := range caa {
			dns.AddCAA(t, parent, "issue", v)
		}
	}
	const otherAccount = "https://ca.invalid/acct/1"

	// No account yet: a record bound to an account cannot allow this one.
	attach("shop.bound.example.com", "pebble.letsencrypt.org; accounturi="+otherAccount)
	d := verify("shop.bound.example.com")
	f := onlyFinding(t, d, dnscheck.CodeCAABlocksCA)
	domaintest.Contains(t, "message", f.Message, otherAccount, "no account")

	// The identity from the directory: Let's Encrypt's is not Pebble's.
	attach("shop.le.example.com", "letsencrypt.org")
	f = onlyFinding(t, verify("shop.le.example.com"), dnscheck.CodeCAABlocksCA)
	domaintest.Contains(t, "message", f.Message, "pebble.letsencrypt.org")
	if f.Expected != `le.example.com CAA 0 issue "pebble.letsencrypt.org"` {
		t.Errorf("expected %q", f.Expected)
	}

	// Pebble's identity: verified, and the first order registers the account.
	attach("shop.pebble.example.com", "pebble.letsencrypt.org")
	if d := verify("shop.pebble.example.com"); d.State != store.DomainVerified {
		t.Fatalf("CAA naming pebble.letsencrypt.org: %+v", d.Check)
	}

	// Now the bound record is judged against the real account.
	prefix := strings.TrimSuffix(pebble.DirectoryURL(), "/dir") + "/my-account/"
	domaintest.WaitFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		if f = onlyFinding(t, verify("shop.bound.example.com"), dnscheck.CodeCAABlocksCA); !strings.Contains(f.Message, prefix) {
			return fmt.Errorf("the account URI does not show: %s", f.Message)
		}
		return nil
	})
	domaintest.Contains(t, "message", f.Message, otherAccount, "this platform's account is "+prefix)
	if !strings.Contains(f.Expected, "accounturi="+prefix) {
		t.Fatalf("the record that would allow does not name the account: %q", f.Expected)
	}
	dns.Clear(t, domaintest.CAA, "bound.example.com")
	_, value, _ := strings.Cut(f.Expected, " issue ")
	dns.AddCAA(t, "bound.example.com", "issue", strings.Trim(value, `"`))
	if d := verify("shop.bound.example.com"); d.State != store.DomainVerified {
		t.Fatalf("with %s: %+v", f.Expected, d.Check)
	}
}

func onlyFinding(t *testing.T, d store.Domain, code string) store.Finding {
	t.Helper()
	if d.Check == nil {
		t.Fatalf("%s was not checked", d.Name)
	}
	return domaintest.OneFinding(t, *d.Check, code)
}
