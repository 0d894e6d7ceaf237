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
	"slices"
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
func startDelegated(t *testing.T, o domaintest.PebbleOptions, a domains.ACME) (*boltstore.DB, *domaintest.DNSServer, *domaintest.Pebble, *domains.Manager) {
	t.Helper()
	db := deployedStore(t)
	resolver, resolverAddr := domaintest.StartResolver(t, acmeZone, startACMEDNS(t, db))
	resolver.Set(t, domaintest.CNAMETarget+". 0 IN A 127.0.0.1")
	o.DNSServer = resolverAddr
	pebble := domaintest.StartPebble(t, nil, o)
	return db, resolver, pebble, delegatedManager(t, db, resolverAddr, pebble, a)
}

// startServedDelegated is startDelegated with pebble's and the manager's
// defaults, and m's certificates served (serveTLS) at tlsAddr. It starts
// pebble, so -short skips the test.
func startServedDelegated(t *testing.T) (db *boltstore.DB, resolver *domaintest.DNSServer, pebble *domaintest.Pebble, m *domains.Manager, tlsAddr string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts pebble")
	}
	db, resolver, pebble, m = startDelegated(t, domaintest.PebbleOptions{}, domains.ACME{})
	return db, resolver, pebble, m, serveTLS(t, m)
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
func createRecords(t *testing.T, r *domaintest.DNSServer, d store.Domain) {
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
	t.Parallel()
	db, resolver, pebble, m, tlsAddr := startServedDelegated(t)
	ctx := context.Background()
	const name = "shop.customer.test"
	// The live site, elsewhere.
	resolver.Set(t, name+". 0 IN CNAME old-host.elsewhere.test.")
	resolver.Set(t, "old-host.elsewhere.test. 0 IN A 127.0.0.2")

	d, err := m.Add(ctx, name, nil)
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
	slowParallel(t, "starts pebble and waits for a renewal")
	db, resolver, _, m := startDelegated(t, domaintest.PebbleOptions{Profiles: map[string]int{"short": 30}}, domains.ACME{Profile: "short", RenewInterval: time.Second})
	ctx := context.Background()
	const name = "www.proxied.test"
	resolver.Set(t, name+". 0 IN CNAME "+domaintest.CNAMETarget+".")
	d, err := m.Add(ctx, name, nil)
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
	slowParallel(t, "starts pebble and PostgreSQL")
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
	d, err := mA.Add(ctx, name, nil)
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
	clk := domaintest.NewClock(time.Now().UTC())
	m := domaintest.NewManager(t, domains.Config{
		Store:         db,
		Platform:      dnscheck.Platform{Domain: domaintest.PlatformDomain, CNAMETarget: domaintest.CNAMETarget},
		Checker:       &dnscheck.Checker{Resolvers: []string{resolverAddr}, Timeout: time.Second},
		ACMEDNSZone:   acmeZone,
		AllowTestTLDs: true,
		Now:           clk.Now,
		TickEvery:     time.Hour,
	})
	ctx := context.Background()
	const name = "www.background.test"
	resolver.Set(t, name+". 0 IN CNAME old-host.elsewhere.test.")
	resolver.Set(t, domaintest.CNAMETarget+". 0 IN A 127.0.0.1")
	d, err := m.Add(ctx, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	due := func(want string) store.Domain {
		t.Helper()
		d, err := db.Domain(ctx, name)
		if err != nil || d.NextCheckAt == nil {
			t.Fatalf("no next check: %+v, %v", d, err)
		}
		clk.Set(*d.NextCheckAt)
		m.CheckDue(ctx)
		if d, err = db.Domain(ctx, name); err != nil || d.State != want {
			t.Fatalf("after the check due at %v: %+v, %v; want %s", clk.Now(), d, err, want)
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
	clk.Advance(30 * 24 * time.Hour)
	d = due(store.DomainOwned)
	if d.NextCheckAt.Sub(clk.Now()) != 5*time.Minute {
		t.Errorf("an owned domain's next check at %v, now %v", d.NextCheckAt, clk.Now())
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

var wildcardPlatform = dnscheck.Platform{Domain: "petstore.app", CNAMETarget: "cname.petstore.app"}

// TestAddWildcard: a wildcard is added only while the service answers an
// ACME DNS zone; its name is normalised, its CNAME record is the "*" one,
// and it is found, listed and removed under its own name.
func TestAddWildcard(t *testing.T) {
	ctx := context.Background()
	without := managerWith(t, domains.Config{Platform: wildcardPlatform})
	_, err := without.Add(ctx, "*.shop.example.com", nil)
	// It points to where the zone's set-up is told (the README only names it).
	wantCode(t, err, store.ENOACMEDNSZONE, "*.shop.example.com", "--acme-dns-zone", "DNS-01", "docs/domains.md")
	if ds, _ := without.List(ctx); len(ds) != 0 {
		t.Fatalf("stored without the zone: %+v", ds)
	}
	if _, err := without.Add(ctx, "shop.example.com", nil); err != nil {
		t.Fatalf("a single name needs no zone: %v", err)
	}

	m := managerWith(t, domains.Config{Platform: wildcardPlatform, ACMEDNSZone: "acme.petstore.app"})
	d, err := m.Add(ctx, " *.Shop.Example.COM. ", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "*.shop.example.com" || d.State != store.DomainPending || d.Apex || len(d.Records) == 0 {
		t.Fatalf("added %+v", d)
	}
	r := d.Records[0]
	if r.Type != dnscheck.TypeCNAME || r.Host != "*.shop" || r.Name != "*.shop.example.com" || r.Value != "cname.petstore.app" {
		t.Errorf("record %+v", r)
	}
	_, err = m.Add(ctx, "*.shop.example.com", nil)
	wantCode(t, err, store.EDOMAINEXISTS)
	for in, mention := range map[string]string{
		"a.*.example.com":   "* as the whole first label",
		"*.*.example.com":   "* as the whole first label",
		"*.co.uk":           "public suffix co.uk",
		"*.petstore.app":    "belongs to the platform",
		"*.x.petstore.app":  "belongs to the platform",
		"*.shop.example":    ".example",
		"*.shop.example.zz": "not a top-level domain",
	} {
		_, err := m.Add(ctx, in, nil)
		wantCode(t, err, store.EINVALID, mention)
	}
	for _, name := range []string{"*.shop.example.com", "*.SHOP.example.com."} {
		if got, err := m.Get(ctx, name); err != nil || got.Name != "*.shop.example.com" {
			t.Errorf("Get(%q) = %+v, %v", name, got.Name, err)
		}
	}
	if _, err := m.Get(ctx, "a.shop.example.com"); store.ErrorCode(err) != store.ENOTFOUND {
		t.Errorf("a covered name is not an attached domain: %v", err)
	}
	if err := m.Remove(ctx, "*.shop.example.com"); err != nil {
		t.Fatal(err)
	}
	if ds, _ := m.List(ctx); len(ds) != 0 {
		t.Errorf("left after removal: %+v", ds)
	}
}

// TestWildcardRouting: a served wildcard covers every name one label below
// its base and nothing else; a name attached on its own wins once it is
// served; removing the wildcard stops every name under it at once.
func TestWildcardRouting(t *testing.T) {
	ctx := context.Background()
	db := deployedStore(t)
	m := domaintest.NewManager(t, domains.Config{Store: db, Checker: &dnscheck.Checker{}, Platform: wildcardPlatform, ACMEDNSZone: "acme.petstore.app"})
	for _, name := range []string{"*.shop.example.com", "api.shop.example.com", "other.example.com"} {
		if _, err := m.Add(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	setState := func(name, state string) {
		t.Helper()
		if _, err := db.UpdateDomain(ctx, name, func(d *store.Domain) error { d.State = state; return nil }); err != nil {
			t.Fatal(err)
		}
		if err := m.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := func(when string, routes map[string]domains.Decision, covers map[string]string) {
		t.Helper()
		for host, d := range routes {
			if got := m.Route(host).Decision; got != d {
				t.Errorf("%s: Route(%s) = %v, want %v", when, host, got, d)
			}
		}
		for host, w := range covers {
			if got := m.CertificateCover(host); got != w {
				t.Errorf("%s: the certificate of %s is %q's, want %q's", when, host, got, w)
			}
			if m.CertificateAllowed(host) && host != "api.shop.example.com" && host != "*.shop.example.com" {
				t.Errorf("%s: %s may get a certificate of its own", when, host)
			}
		}
	}

	want("pending", map[string]domains.Decision{"a.shop.example.com": domains.Unknown, "api.shop.example.com": domains.Unknown},
		map[string]string{"a.shop.example.com": ""})

	setState("*.shop.example.com", store.DomainVerified)
	want("wildcard verified", map[string]domains.Decision{
		"a.shop.example.com":      domains.ServePublic,
		"B.Shop.Example.com.:443": domains.ServePublic,
		"api.shop.example.com":    domains.ServePublic, // attached, pending: the wildcard keeps serving it
		"shop.example.com":        domains.Unknown,     // the base is not covered
		"x.y.shop.example.com":    domains.Unknown,     // two labels below
		"*.shop.example.com":      domains.Unknown,     // the literal name is no host
		"a.shopx.example.com":     domains.Unknown,
		"a.other.example.com":     domains.Unknown,
	}, map[string]string{
		"a.shop.example.com":   "*.shop.example.com",
		"api.shop.example.com": "*.shop.example.com",
		"x.y.shop.example.com": "",
		"shop.example.com":     "",
		"*.shop.example.com":   "",
	})
	if !m.CertificateAllowed("*.shop.example.com") {
		t.Error("the verified wildcard may not get its certificate")
	}
	for _, host := range []string{"a.shop.example.com", "x.y.shop.example.com", "shop.example.com"} {
		if m.CertificateAllowed(host) {
			t.Errorf("%s may get a certificate of its own: the decision function would order one", host)
		}
	}

	setState("api.shop.example.com", store.DomainVerified)
	want("exact verified", map[string]domains.Decision{"api.shop.example.com": domains.ServePublic, "a.shop.example.com": domains.ServePublic},
		map[string]string{"a.shop.example.com": "*.shop.example.com"})
	if !m.CertificateAllowed("api.shop.example.com") {
		t.Error("the exact domain, once verified, gets a certificate of its own")
	}

	if err := m.Remove(ctx, "*.shop.example.com"); err != nil {
		t.Fatal(err)
	}
	want("wildcard removed", map[string]domains.Decision{
		"a.shop.example.com":   domains.Unknown,
		"b.shop.example.com":   domains.Unknown,
		"api.shop.example.com": domains.ServePublic, // served on its own
	}, map[string]string{"a.shop.example.com": ""})
}

// TestRedirectsRefuseWildcards: a redirect answers one Host with one
// Location, so neither end may be a wildcard, nor may the primary domain.
func TestRedirectsRefuseWildcards(t *testing.T) {
	ctx := context.Background()
	db := deployedStore(t)
	m := domaintest.NewManager(t, domains.Config{Store: db, Checker: &dnscheck.Checker{}, Platform: wildcardPlatform, ACMEDNSZone: "acme.petstore.app"})
	for _, name := range []string{"*.shop.example.com", "www.example.com"} {
		if _, err := m.Add(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := db.UpdateDomain(ctx, name, func(d *store.Domain) error { d.State = store.DomainVerified; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		in      store.Settings
		mention string
	}{
		{store.Settings{Domains: store.DomainSettings{Redirects: []store.Redirect{{From: "*.shop.example.com", To: "www.example.com"}}}}, "domains.redirects[0].from: *.shop.example.com is a wildcard"},
		{store.Settings{Domains: store.DomainSettings{Redirects: []store.Redirect{{From: "www.example.com", To: "*.Shop.example.com"}}}}, "domains.redirects[0].to: *.shop.example.com is a wildcard"},
		{store.Settings{Domains: store.DomainSettings{Primary: "*.shop.example.com"}}, "domains.primary: *.shop.example.com is a wildcard"},
	} {
		_, err := m.SaveSettings(ctx, tc.in)
		wantCode(t, err, store.EINVALID, tc.mention, "www.shop.example.com")
	}
	if s, _ := m.Settings(ctx); len(s.Domains.Redirects) != 0 || s.Domains.Primary != "" {
		t.Errorf("saved: %+v", s)
	}
}

// TestWildcardSharesDelegationWithBase: *.shop.example.com and
// shop.example.com name the same _acme-challenge.shop.example.com, which
// holds one CNAME: whichever is added second gets the first's token and
// label, so the records shown never contradict each other.
func TestWildcardSharesDelegationWithBase(t *testing.T) {
	ctx := context.Background()
	m := managerWith(t, domains.Config{Platform: wildcardPlatform, ACMEDNSZone: "acme.petstore.app"})
	delegation := func(d store.Domain) (txt, cname store.DNSRecord) {
		t.Helper()
		txt, cname = findDelegationRecords(d)
		if txt.Name == "" || cname.Name == "" {
			t.Fatalf("%s has no delegation records: %+v", d.Name, d.Records)
		}
		return txt, cname
	}
	for _, order := range [][2]string{{"*.shop.example.com", "shop.example.com"}, {"www.example.com", "*.www.example.com"}} {
		first, err := m.Add(ctx, order[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		second, err := m.Add(ctx, order[1], nil)
		if err != nil {
			t.Fatal(err)
		}
		t1, c1 := delegation(first)
		t2, c2 := delegation(second)
		if t1 != t2 || c1 != c2 || *first.Delegation != *second.Delegation {
			t.Errorf("%s and %s disagree:\n%+v %+v\n%+v %+v", order[0], order[1], t1, c1, t2, c2)
		}
	}
	other, err := m.Add(ctx, "other.example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	if other.Delegation.Label == "" || other.Delegation.Label == func() string { d, _ := m.Get(ctx, "shop.example.com"); return d.Delegation.Label }() {
		t.Errorf("an unrelated domain shares a label: %+v", other.Delegation)
	}
}

// TestWildcardAgainstPebble: *.shop.customer.test, with its ownership and
// delegation records at shop.customer.test and its "*" CNAME pointing
// here, is verified and gets one certificate, for the wildcard, through
// DNS-01; handshakes for a.shop and b.shop both get it. An exact
// api.shop.customer.test beside it gets its own; x.y.shop.customer.test
// gets none, and no order is made for it.
func TestWildcardAgainstPebble(t *testing.T) {
	t.Parallel()
	db, resolver, pebble, m, tlsAddr := startServedDelegated(t)
	ctx := context.Background()
	const wildcard, base = "*.shop.customer.test", "shop.customer.test"

	d, err := m.Add(ctx, wildcard, nil)
	if err != nil {
		t.Fatal(err)
	}
	txt, cname := findDelegationRecords(d)
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
	api, err := m.Add(ctx, "api."+base, nil)
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
