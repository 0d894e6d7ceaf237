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
	"petstore/domains/domaintest"
	"petstore/store"
)

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
	db := deployedStore(t)
	resolver, resolverAddr := domaintest.StartResolver(t, acmeZone, startACMEDNS(t, db))
	resolver.Set(t, domaintest.CNAMETarget+". 0 IN A 127.0.0.1")
	pebble := domaintest.StartPebble(t, nil, domaintest.PebbleOptions{DNSServer: resolverAddr})
	m := delegatedManager(t, db, resolverAddr, pebble, domains.ACME{})
	tlsAddr := serveTLS(t, m)
	ctx := context.Background()
	const wildcard, base = "*.shop.customer.test", "shop.customer.test"

	d, err := m.Add(ctx, wildcard)
	if err != nil {
		t.Fatal(err)
	}
	var txt, cname store.DNSRecord
	for _, r := range d.Records {
		switch r.Purpose {
		case store.RecordPurposeOwnership:
			txt = r
		case store.RecordPurposeDelegation:
			cname = r
		}
	}
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
