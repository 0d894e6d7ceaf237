package domains_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"petstore/domains"
	"petstore/domains/acmedns"
	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
)

// The zone the service answers ACME DNS-01 challenges in, in these tests.
const acmeZone = "acme.plat.test"

// startACMEDNS starts the service's DNS server for acmeZone on kv and
// returns its UDP address.
func startACMEDNS(t *testing.T, kv acmedns.Store) string {
	t.Helper()
	udp, _ := domaintest.StartACMEDNS(t, acmedns.Config{Zone: acmeZone, Store: kv})
	return udp
}

// delegatedManager is a manager with --acme-dns-zone whose checker and CA
// both resolve through resolver. HTTP-01 is off, and TLS-ALPN-01 is
// answered on another port than the one pebble connects to (certmagic
// binds its port itself when it is free): certificates can come through
// DNS-01 only.
func delegatedManager(t *testing.T, db domains.Store, resolver string, pebble *domaintest.Pebble, a domains.ACME) *domains.Manager {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() }) // held: certmagic cannot bind it either
	a.CA, a.TrustedRoots, a.TLSPort, a.DisableHTTPChallenge = pebble.DirectoryURL(), pebble.RootsPool(), ln.Addr().(*net.TCPAddr).Port, true
	if a.Profile == "" {
		a.Profile = "default"
	}
	return domaintest.NewManager(t, domains.Config{
		Store:         db,
		Platform:      dnscheck.Platform{Domain: domaintest.PlatformDomain, CNAMETarget: domaintest.CNAMETarget},
		Checker:       &dnscheck.Checker{Resolvers: []string{resolver}, Timeout: time.Second},
		ACME:          &a,
		ACMEDNSZone:   acmeZone,
		AllowTestTLDs: true,
		TickEvery:     time.Hour, // the tests start due work themselves
	})
}

// startDelegated starts what the delegated tests share: a deployed store
// whose own DNS server answers acmeZone, a resolver that delegates that
// zone to it and resolves the CNAME target here, pebble (with o) asking
// that resolver, and a delegatedManager on them with a.
func startDelegated(t *testing.T, o domaintest.PebbleOptions, a domains.ACME) (*boltstore.DB, *domaintest.Resolver, *domaintest.Pebble, *domains.Manager) {
	t.Helper()
	db := deployedStore(t)
	resolver, resolverAddr := domaintest.StartResolver(t, acmeZone, startACMEDNS(t, db))
	resolver.Set(t, domaintest.CNAMETarget+". 0 IN A 127.0.0.1")
	o.DNSServer = resolverAddr
	pebble := domaintest.StartPebble(t, nil, o)
	return db, resolver, pebble, delegatedManager(t, db, resolverAddr, pebble, a)
}

// serveTLS serves m's certificates on a loopback port of its own.
func serveTLS(t *testing.T, m *domains.Manager) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }),
		ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.Serve(tls.NewListener(ln, m.TLSConfig())) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// findDelegationRecords returns the ownership TXT and the delegation CNAME
// among a domain's records, the zero record for one that is missing.
func findDelegationRecords(d store.Domain) (txt, cname store.DNSRecord) {
	for _, r := range d.Records {
		switch r.Purpose {
		case store.RecordPurposeOwnership:
			txt = r
		case store.RecordPurposeDelegation:
			cname = r
		}
	}
	return txt, cname
}

// delegationRecords finds the ownership TXT and the delegation CNAME among
// a domain's records.
func delegationRecords(t *testing.T, d store.Domain) (txt, cname store.DNSRecord) {
	t.Helper()
	txt, cname = findDelegationRecords(d)
	if txt.Type != "TXT" || txt.Name != "_petstore-challenge."+d.Name || d.Delegation == nil || txt.Value != d.Delegation.Token || txt.Value == "" ||
		cname.Type != "CNAME" || cname.Name != "_acme-challenge."+d.Name || !strings.HasSuffix(cname.Value, "."+acmeZone) ||
		strings.Count(strings.TrimSuffix(cname.Value, "."+acmeZone), ".") != 0 || cname.Note == "" || txt.Note == "" {
		t.Fatalf("the records of a move without downtime: %+v, %+v in %+v", txt, cname, d.Records)
	}
	return txt, cname
}

// createRecords creates the ownership and delegation records on resolver.
func createRecords(t *testing.T, r *domaintest.Resolver, d store.Domain) {
	t.Helper()
	txt, cname := delegationRecords(t, d)
	r.Set(t, fmt.Sprintf("%s. 0 IN TXT %q", txt.Name, txt.Value))
	r.Set(t, fmt.Sprintf("%s. 0 IN CNAME %s.", cname.Name, cname.Value))
}

func waitDomain(t *testing.T, db domains.Store, name, what string, cond func(store.Domain) bool) store.Domain {
	t.Helper()
	var d store.Domain
	domaintest.WaitFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		var err error
		if d, err = db.Domain(context.Background(), name); err != nil || !cond(d) {
			return fmt.Errorf("%s: %+v, %v", what, d, err)
		}
		return nil
	})
	return d
}

// acmeRequests counts pebble's log lines of ACME requests.
func acmeRequests(log string) int { return strings.Count(log, "-> calling handler()") }

// TestMoveWithoutDowntime: a domain whose CNAME still points elsewhere
// becomes owned once its TXT is found, gets its certificate through
// DNS-01 (answered by the service's own DNS server, which pebble reaches
// through the customer's CNAME), and after the switch its first handshake
// succeeds with that certificate, with no ACME request in between.
func TestMoveWithoutDowntime(t *testing.T) {
	if testing.Short() {
		t.Skip("starts pebble")
	}
	db, resolver, pebble, m := startDelegated(t, domaintest.PebbleOptions{}, domains.ACME{})
	tlsAddr := serveTLS(t, m)
	ctx := context.Background()
	const name = "shop.customer.test"
	// The live site, elsewhere.
	resolver.Set(t, name+". 0 IN CNAME old-host.elsewhere.test.")
	resolver.Set(t, "old-host.elsewhere.test. 0 IN A 127.0.0.2")

	d, err := m.Add(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	delegationRecords(t, d)
	if d, err = m.Verify(ctx, name); err != nil || d.State != store.DomainPending || d.Delegation.OwnershipFound {
		t.Fatalf("verify before the records exist: %+v, %v", d, err)
	}
	createRecords(t, resolver, d)
	if d, err = m.Verify(ctx, name); err != nil || d.State != store.DomainOwned || !d.Delegation.OwnershipFound || !d.Delegation.Delegated || d.Delegation.OwnedAt == nil {
		t.Fatalf("verify with the records, the CNAME elsewhere: %+v, %v", d, err)
	}
	d = waitDomain(t, db, name, "certificate while owned", func(d store.Domain) bool { return d.Certificate.State == store.CertIssued })
	if d.State != store.DomainOwned || d.Certificate.Serial == "" || len(d.Certificate.Names) != 1 || d.Certificate.Names[0] != name {
		t.Fatalf("owned with its certificate: %+v", d)
	}
	if !strings.Contains(strings.Join(resolver.Asked(), "\n"), d.Delegation.Label+"."+acmeZone+" TXT") {
		t.Errorf("pebble's resolver never asked the service's DNS server for the challenge: %v", resolver.Asked())
	}
	// Owned is not served: its traffic still goes elsewhere.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pebble.IssuerRootPEM(t))
	dial := func() (*tls.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", tlsAddr, &tls.Config{ServerName: name, RootCAs: roots})
	}
	if conn, err := dial(); err == nil {
		conn.Close()
		t.Error("an owned domain's certificate is served before its DNS points here")
	}
	if r := m.Route(name); r.Decision != domains.Unknown {
		t.Errorf("an owned domain is routed: %+v", r)
	}

	// The switch, then Verify and the first handshake: no ACME request.
	before := acmeRequests(pebble.Log())
	resolver.Set(t, name+". 0 IN CNAME "+domaintest.CNAMETarget+".")
	if d, err = m.Verify(ctx, name); err != nil || d.State != store.DomainVerified {
		t.Fatalf("verify after the switch: %+v, %v", d, err)
	}
	conn, err := dial()
	if err != nil {
		t.Fatalf("the first handshake after the switch: %v", err)
	}
	served := fmt.Sprintf("%x", conn.ConnectionState().PeerCertificates[0].SerialNumber)
	conn.Close()
	if served != d.Certificate.Serial {
		t.Errorf("served serial %s, want the one obtained ahead, %s", served, d.Certificate.Serial)
	}
	if after := acmeRequests(pebble.Log()); after != before {
		t.Errorf("%d ACME requests between the switch and the first handshake", after-before)
	}
}

// TestProxiedDomainRenewsThroughDNS01: the CA sees the name at an address
// where nothing answers (a proxy in front: HTTP-01 and TLS-ALPN-01 cannot
// work), and a delegated domain is still issued and renewed, through
// DNS-01.
func TestProxiedDomainRenewsThroughDNS01(t *testing.T) {
	if testing.Short() {
		t.Skip("starts pebble and waits for a renewal")
	}
	db, resolver, _, m := startDelegated(t, domaintest.PebbleOptions{Profiles: map[string]int{"short": 30}}, domains.ACME{Profile: "short", RenewInterval: time.Second})
	ctx := context.Background()
	const name = "www.proxied.test"
	resolver.Set(t, name+". 0 IN CNAME "+domaintest.CNAMETarget+".")
	d, err := m.Add(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	createRecords(t, resolver, d)
	if d, err = m.Verify(ctx, name); err != nil || d.State != store.DomainVerified || !d.Delegation.Delegated {
		t.Fatalf("verify: %+v, %v", d, err)
	}
	// From here the CA sees the proxy's address, where nothing listens.
	resolver.Set(t, name+". 0 IN A 127.0.0.3")
	first := waitDomain(t, db, name, "first certificate", func(d store.Domain) bool { return d.Certificate.State == store.CertIssued }).Certificate
	challenge := d.Delegation.Label + "." + acmeZone + " TXT"
	asked := strings.Count(strings.Join(resolver.Asked(), "\n"), challenge)
	renewed := waitDomain(t, db, name, "renewal", func(d store.Domain) bool {
		return d.Certificate.State == store.CertIssued && d.Certificate.Serial != first.Serial
	}).Certificate
	if last := renewed.Events[len(renewed.Events)-1]; last.Kind != store.CertEventRenewed {
		t.Errorf("events after the renewal: %+v", renewed.Events)
	}
	if time.Now().After(*first.NotAfter) {
		t.Errorf("renewed only after the first certificate expired at %v", first.NotAfter)
	}
	// The renewal was validated through the service's zone too.
	if n := strings.Count(strings.Join(resolver.Asked(), "\n"), challenge); n == asked {
		t.Errorf("the renewal's challenge was never asked of the service's DNS server: %v", resolver.Asked())
	}
}

// presentCounter is a store that counts the challenge values written
// through it.
type presentCounter struct {
	*postgres.DB
	writes atomic.Int64
}

func (p *presentCounter) KVPut(ctx context.Context, key string, value []byte) error {
	if strings.HasPrefix(key, "acmedns/") {
		p.writes.Add(1)
	}
	return p.DB.KVPut(ctx, key, value)
}

// TestDelegatedIssuanceOnTwoInstances: two instances on one PostgreSQL
// database; the challenge's TXT written through A is answered by B's DNS
// server (the only one pebble's resolver asks), and while A issues, B's
// certificate rounds order nothing: one order.
func TestDelegatedIssuanceOnTwoInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("starts pebble and PostgreSQL")
	}
	url := pgtest.URL(t)
	open := func() *postgres.DB { return domaintest.OpenPostgres(t, url) }
	ctx := context.Background()
	a, b := &presentCounter{DB: open()}, open()
	if _, err := a.UpdateProject(ctx, func(p *store.Project) error { p.Plan = store.PlanPro; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := a.RecordDeploy(ctx, store.Deploy{Version: "1.0.0", Status: "succeeded"}); err != nil {
		t.Fatal(err)
	}
	startACMEDNS(t, a)
	resolver, resolverAddr := domaintest.StartResolver(t, acmeZone, startACMEDNS(t, b))
	pebble := domaintest.StartPebble(t, nil, domaintest.PebbleOptions{DNSServer: resolverAddr})
	mA := delegatedManager(t, a, resolverAddr, pebble, domains.ACME{})
	mB := delegatedManager(t, b, resolverAddr, pebble, domains.ACME{})
	const name = "shop.twice.test"
	resolver.Set(t, name+". 0 IN CNAME old-host.elsewhere.test.")
	d, err := mA.Add(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	createRecords(t, resolver, d)
	if d, err = mA.Verify(ctx, name); err != nil || d.State != store.DomainOwned {
		t.Fatalf("verify on A: %+v, %v", d, err)
	}
	// A presents its challenge; B's rounds meanwhile must not order.
	domaintest.WaitFor(t, 30*time.Second, 5*time.Millisecond, func() error {
		if d, _ := b.Domain(ctx, name); a.writes.Load() == 0 && d.Certificate.State != store.CertIssued {
			return fmt.Errorf("A wrote no challenge yet")
		}
		return nil
	})
	domaintest.WaitFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		mB.TendCertificates(ctx)
		if d, _ := b.Domain(ctx, name); d.Certificate.State != store.CertIssued {
			return fmt.Errorf("not issued yet: %+v", d.Certificate)
		}
		return nil
	})
	mB.TendCertificates(ctx)
	if a.writes.Load() == 0 {
		t.Fatal("the challenge was not written through A")
	}
	if !strings.Contains(strings.Join(resolver.Asked(), "\n"), d.Delegation.Label+"."+acmeZone+" TXT") {
		t.Errorf("B's DNS server was never asked for the challenge: %v", resolver.Asked())
	}
	if n := strings.Count(pebble.Log(), "POST /order-plz -> calling handler()"); n != 1 {
		t.Errorf("%d orders, want 1", n)
	}
}

// TestOwnershipInTheBackground: the background check finds the ownership
// TXT and makes the domain owned, checks it again every 5 minutes with no
// end, sends it back to pending when the TXT is gone, and makes it
// verified once its CNAME points here; the events follow.
func TestOwnershipInTheBackground(t *testing.T) {
	db := deployedStore(t)
	resolver, resolverAddr := domaintest.StartResolver(t, acmeZone, startACMEDNS(t, db))
	clk := &clock{t: time.Now().UTC()}
	m := domaintest.NewManager(t, domains.Config{
		Store:         db,
		Platform:      dnscheck.Platform{Domain: domaintest.PlatformDomain, CNAMETarget: domaintest.CNAMETarget},
		Checker:       &dnscheck.Checker{Resolvers: []string{resolverAddr}, Timeout: time.Second},
		ACMEDNSZone:   acmeZone,
		AllowTestTLDs: true,
		Now:           clk.now,
		TickEvery:     time.Hour,
	})
	ctx := context.Background()
	const name = "www.background.test"
	resolver.Set(t, name+". 0 IN CNAME old-host.elsewhere.test.")
	resolver.Set(t, domaintest.CNAMETarget+". 0 IN A 127.0.0.1")
	d, err := m.Add(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	due := func(want string) store.Domain {
		t.Helper()
		d, err := db.Domain(ctx, name)
		if err != nil || d.NextCheckAt == nil {
			t.Fatalf("no next check: %+v, %v", d, err)
		}
		clk.set(*d.NextCheckAt)
		m.CheckDue(ctx)
		if d, err = db.Domain(ctx, name); err != nil || d.State != want {
			t.Fatalf("after the check due at %v: %+v, %v; want %s", clk.now(), d, err, want)
		}
		return d
	}
	txt, _ := delegationRecords(t, d)
	resolver.Set(t, fmt.Sprintf("%s. 0 IN TXT %q", txt.Name, txt.Value))
	d = due(store.DomainOwned)
	if !d.Delegation.OwnershipFound || d.Delegation.Delegated || d.Delegation.OwnedAt == nil || d.Certificate.State != store.CertNone {
		t.Errorf("owned without the delegation: %+v %+v", d.Delegation, d.Certificate)
	}
	// Weeks later, still checked every 5 minutes.
	clk.advance(30 * 24 * time.Hour)
	d = due(store.DomainOwned)
	if d.NextCheckAt.Sub(clk.now()) != 5*time.Minute {
		t.Errorf("an owned domain's next check at %v, now %v", d.NextCheckAt, clk.now())
	}
	resolver.Clear(txt.Name)
	d = due(store.DomainPending)
	if d.Delegation.OwnershipFound || d.Delegation.OwnershipLostAt == nil {
		t.Errorf("ownership lost: %+v", d.Delegation)
	}
	resolver.Set(t, fmt.Sprintf("%s. 0 IN TXT %q", txt.Name, txt.Value))
	if d, err = m.Verify(ctx, name); err != nil || d.State != store.DomainOwned {
		t.Fatalf("verify with the TXT back: %+v, %v", d, err)
	}
	resolver.Set(t, name+". 0 IN CNAME "+domaintest.CNAMETarget+".")
	due(store.DomainVerified)
	types := eventTypes(t, db, "domain")
	if want := "domain.added domain.owned domain.owned domain.verified"; strings.Join(types, " ") != want {
		t.Errorf("events %v, want %s", types, want)
	}
}
