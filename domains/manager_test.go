package domains_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/domains"
	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/boltstore"
)

// slowParallel runs the test in parallel, unless -short skips it for the
// reason given: it starts servers and waits on them.
func slowParallel(t *testing.T, why string) {
	t.Helper()
	t.Parallel()
	if testing.Short() {
		t.Skip(why)
	}
}

// deployedStore is a fresh store whose project can have custom domains:
// plan pro, one successful deploy.
func deployedStore(t *testing.T) *boltstore.DB {
	t.Helper()
	db := domaintest.OpenStore(t)
	ctx := context.Background()
	if _, err := db.UpdateProject(ctx, func(p *store.Project) error { p.Plan = store.PlanPro; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RecordDeploy(ctx, store.Deploy{Version: "1.0.0", Status: "succeeded"}); err != nil {
		t.Fatal(err)
	}
	return db
}

// managerWith builds a manager on a fresh store (plan pro, one successful
// deploy) from cfg, which gets the store.
func managerWith(t *testing.T, cfg domains.Config) *domains.Manager {
	t.Helper()
	cfg.Store = deployedStore(t)
	if cfg.Checker == nil {
		cfg.Checker = &dnscheck.Checker{}
	}
	return domaintest.NewManager(t, cfg)
}

func wantCode(t *testing.T, err error, code string, mentions ...string) {
	t.Helper()
	var appErr *store.Error
	if !errors.As(err, &appErr) || appErr.Code != code {
		t.Fatalf("got %v, want %s", err, code)
	}
	for _, m := range mentions {
		if !strings.Contains(appErr.Message, m) {
			t.Errorf("message %q does not mention %q", appErr.Message, m)
		}
	}
}

// TestAddRefusesSpecialUseNames: names under special-use top-level domains,
// and under any TLD outside the ICANN section of the public suffix list,
// can never get a public certificate, so they are refused when added;
// .test is let through only with AllowTestTLDs.
func TestAddRefusesSpecialUseNames(t *testing.T) {
	platform := dnscheck.Platform{Domain: "petstore.app", CNAMETarget: "cname.petstore.app"}
	strict := managerWith(t, domains.Config{Platform: platform})
	ctx := context.Background()
	for _, refused := range []struct{ name, mention string }{
		{"shop.localhost", ".localhost"},
		{"shop.invalid", ".invalid"},
		{"shop.example", ".example"},
		{"printer.local", ".local"},
		{"duckduck.onion", ".onion"},
		{"wiki.corp.internal", ".internal"},
		{"name.alt", ".alt"},
		{"shop.test", ".test"},
		{"shop.zz", "not a top-level domain"},
		{"4.3.2.in-addr.arpa", ".arpa"},
	} {
		_, err := strict.Add(ctx, refused.name, nil)
		wantCode(t, err, store.EINVALID, refused.name, refused.mention)
	}
	for _, name := range []string{"shop.example.com", "me.blogspot.com", "xn--bcher-kva.de"} {
		if _, err := strict.Add(ctx, name, nil); err != nil {
			t.Errorf("adding %s: %v", name, err)
		}
	}

	tests := managerWith(t, domains.Config{Platform: platform, AllowTestTLDs: true})
	if _, err := tests.Add(ctx, "shop.test", nil); err != nil {
		t.Errorf("with AllowTestTLDs, adding shop.test: %v", err)
	}
	_, err := tests.Add(ctx, "shop.invalid", nil)
	wantCode(t, err, store.EINVALID, ".invalid")
}

// TestAddWithoutCNAMETarget: with no platform domain and no CNAME target
// there is nothing to tell the customer to point at, so adding is refused
// with a code of its own that names the flags.
func TestAddWithoutCNAMETarget(t *testing.T) {
	m := managerWith(t, domains.Config{})
	if got := m.CNAMETarget(); got != "" {
		t.Errorf("CNAMETarget %q without a target", got)
	}
	_, err := m.Add(context.Background(), "shop.example.com", nil)
	wantCode(t, err, store.ENOCNAMETARGET, "--domain", "--cname-target")
	if ds, _ := m.List(context.Background()); len(ds) != 0 {
		t.Errorf("a domain was stored: %+v", ds)
	}
}

// TestVerifyZoneApexSwitchesRecords: a domain added as a subdomain (CNAME)
// that the check finds to be a zone of its own becomes an apex, and its
// records ask for an ALIAS at @ of that zone.
func TestVerifyZoneApexSwitchesRecords(t *testing.T) {
	const target = "sites.platform.test"
	publicIP := netip.MustParseAddr("203.0.113.10")
	_, resolver, port := domaintest.DelegatedZone(t, publicIP.String())
	m := managerWith(t, domains.Config{
		Platform: dnscheck.Platform{Domain: "petstore.app", CNAMETarget: target, PublicIPs: []netip.Addr{publicIP}},
		Checker: &dnscheck.Checker{
			Resolvers: []string{resolver}, NameserverPort: port, Timeout: time.Second, AllowPrivateNameservers: true,
		},
		AllowTestTLDs: true,
	})
	ctx := context.Background()
	d, err := m.Add(ctx, "shop.deleg.test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Apex || d.Records[0].Type != dnscheck.TypeCNAME {
		t.Fatalf("added as %+v", d)
	}
	if d, err = m.Verify(ctx, "shop.deleg.test"); err != nil {
		t.Fatal(err)
	}
	if d.State != store.DomainVerified || !d.Apex || d.Records[0].Type != dnscheck.TypeALIAS || d.Records[0].Host != "@" {
		t.Errorf("after verify: state %s apex %v records %+v", d.State, d.Apex, d.Records)
	}
	if got, _ := m.Get(ctx, "shop.deleg.test"); !got.Apex || got.Records[0].Type != dnscheck.TypeALIAS {
		t.Errorf("stored: apex %v records %+v", got.Apex, got.Records)
	}
}

func newManager(t *testing.T, dns *domaintest.DNS, clk *domaintest.Clock) (*domains.Manager, *boltstore.DB) {
	t.Helper()
	db := deployedStore(t)
	m := domaintest.NewManager(t, domains.Config{
		Store:    db,
		Platform: dnscheck.Platform{Domain: "petstore.test", CNAMETarget: "cname.petstore.test"},
		Checker:  &dnscheck.Checker{Resolvers: []string{dns.Addr()}, Timeout: time.Second, AllowPrivateNameservers: true},
		Now:      clk.Now,
	})
	return m, db
}

// noon is the fixed start of the tests' clocks.
var noon = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// newManagerAtNoon starts a DNS server and a manager that asks it, on a
// clock at noon that only the test moves.
func newManagerAtNoon(t *testing.T) (*domains.Manager, *boltstore.DB, *domaintest.DNS, *domaintest.Clock) {
	t.Helper()
	dns := domaintest.StartDNS(t)
	clk := domaintest.NewClock(noon)
	m, db := newManager(t, dns, clk)
	return m, db, dns, clk
}

// TestBackgroundChecks: a pending domain is re-checked on the backoff
// schedule until its DNS is right; a verified one whose DNS moves away is
// flagged as moved, is no longer allowed new certificates, and comes back
// when its DNS does.
func TestBackgroundChecks(t *testing.T) {
	m, db, dns, clk := newManagerAtNoon(t)
	ctx := context.Background()
	const name = "bg.example.org"

	d, err := m.Add(ctx, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.NextCheckAt == nil || d.NextCheckAt.Sub(clk.Now()) != time.Minute {
		t.Fatalf("first background check at %v, want a minute after adding", d.NextCheckAt)
	}
	// Not due yet: nothing happens.
	m.CheckDue(ctx)
	if d, _ = db.Domain(ctx, name); d.Check != nil {
		t.Fatalf("a check ran before it was due: %+v", d.Check)
	}
	// Due, DNS still missing: checked, attempt counted, next one later.
	clk.Advance(time.Minute)
	m.CheckDue(ctx)
	d, _ = db.Domain(ctx, name)
	if d.Check == nil || d.State != store.DomainPending || d.CheckAttempts != 1 || d.NextCheckAt == nil || !d.NextCheckAt.After(clk.Now()) {
		t.Fatalf("after a failed background check: %+v", d)
	}
	// DNS fixed: the next due check verifies it.
	dns.SetCNAME(t, name, "cname.petstore.test")
	clk.Set(*d.NextCheckAt)
	m.CheckDue(ctx)
	if d, _ = db.Domain(ctx, name); d.State != store.DomainVerified || d.VerifiedAt == nil {
		t.Fatalf("after DNS was fixed: %+v", d)
	}
	if r := m.Route(name); r.Decision != domains.ServePublic || !m.CertificateAllowed(name) {
		t.Fatalf("a verified domain is routed %v, certificate allowed %v", r.Decision, m.CertificateAllowed(name))
	}
	if m.CertificateAllowed("stranger.example.org") || !m.CertificateAllowed("petstore.petstore.test") {
		t.Fatal("certificates: a stranger is allowed, or the default address is not")
	}

	// The DNS moves away: seen at the periodic re-check, confirmed every
	// 30 minutes, moved at the third check an hour after the first; still
	// served.
	dns.SetCNAME(t, name, "elsewhere.example.net")
	first := *d.NextCheckAt
	for i := 1; i <= 3; i++ {
		clk.Set(*d.NextCheckAt)
		m.CheckDue(ctx)
		d, _ = db.Domain(ctx, name)
		if want := map[bool]string{true: store.DomainMoved, false: store.DomainVerified}[i == 3]; d.State != want || d.Check.Verified {
			t.Fatalf("check %d after the DNS moved away: state %s, want %s: %+v", i, d.State, want, d)
		}
	}
	if span := clk.Now().Sub(first); span != time.Hour || d.MovedAt == nil || d.PointsElsewhereChecks != 3 {
		t.Fatalf("moved %v after the first check that saw the move, want an hour: %+v", span, d)
	}
	if r := m.Route(name); r.Decision != domains.ServePublic {
		t.Errorf("a moved domain keeps being served until its certificate ends; routed %v", r.Decision)
	}
	if m.CertificateAllowed(name) {
		t.Error("a domain whose DNS moved away may still get a new certificate")
	}
	// And back.
	dns.SetCNAME(t, name, "cname.petstore.test")
	clk.Set(*d.NextCheckAt)
	m.CheckDue(ctx)
	if d, _ = db.Domain(ctx, name); d.State != store.DomainVerified || !m.CertificateAllowed(name) {
		t.Fatalf("after the DNS came back: %+v", d)
	}
}

// TestPendingChecksStopAfter48Hours: the backoff gives up on a domain
// whose DNS never came, so it stops being checked in the background.
func TestPendingChecksStopAfter48Hours(t *testing.T) {
	m, db, _, clk := newManagerAtNoon(t)
	ctx := context.Background()
	if _, err := m.Add(ctx, "never.example.org", nil); err != nil {
		t.Fatal(err)
	}
	checks := 0
	for i := 0; i < 200; i++ {
		d, _ := db.Domain(ctx, "never.example.org")
		if d.NextCheckAt == nil {
			break
		}
		clk.Set(*d.NextCheckAt)
		m.CheckDue(ctx)
		checks++
	}
	d, _ := db.Domain(ctx, "never.example.org")
	if d.NextCheckAt != nil || d.State != store.DomainPending {
		t.Fatalf("still scheduled after %d checks: %+v", checks, d)
	}
	if age := clk.Now().Sub(d.AddedAt); age < 47*time.Hour || age > 49*time.Hour {
		t.Errorf("gave up %v after adding, want about 48 hours", age)
	}
	t.Logf("%d background checks in 48 hours", checks)
}

// TestTroubleshootingAfter30Minutes: a verified domain without a
// certificate gets the troubleshooting steps of the original
// specification, and only after 30 minutes.
func TestTroubleshootingAfter30Minutes(t *testing.T) {
	m, db, dns, clk := newManagerAtNoon(t)
	ctx := context.Background()
	dns.SetCNAME(t, "slow.example.org", "cname.petstore.test")
	if _, err := m.Add(ctx, "slow.example.org", nil); err != nil {
		t.Fatal(err)
	}
	d, err := m.Verify(ctx, "slow.example.org")
	if err != nil || d.State != store.DomainVerified {
		t.Fatalf("verify: %+v %v", d, err)
	}
	d, _ = db.UpdateDomain(ctx, d.Name, func(d *store.Domain) error {
		d.Certificate = store.Certificate{State: store.CertFailed, Error: "CAA forbids issuance"}
		return nil
	})
	clk.Advance(29 * time.Minute)
	if steps := m.Troubleshooting(d); steps != nil {
		t.Fatalf("troubleshooting before 30 minutes: %v", steps)
	}
	clk.Advance(2 * time.Minute)
	steps := strings.Join(m.Troubleshooting(d), "\n")
	for _, want := range []string{"still verifies", "CAA", "Re-verify", "CAA forbids issuance"} {
		if !strings.Contains(steps, want) {
			t.Errorf("troubleshooting lacks %q:\n%s", want, steps)
		}
	}
	// Backing off: the steps say when the next attempt starts, and do not
	// send the customer to Re-verify, which would start nothing.
	next := clk.Now().Add(20 * time.Minute)
	d.Certificate.NextAttemptAt, d.Certificate.NextAttemptReason = &next, "the certificate authority did not answer"
	steps = strings.Join(m.Troubleshooting(d), "\n")
	if !strings.Contains(steps, "starts by itself at "+next.Format("2006-01-02 15:04")) || strings.Contains(steps, "Choose Re-verify to") {
		t.Errorf("troubleshooting while backing off:\n%s", steps)
	}
	d.Certificate.State = store.CertIssued
	if steps := m.Troubleshooting(d); steps != nil {
		t.Errorf("troubleshooting with a certificate: %v", steps)
	}
}

func TestBackoff(t *testing.T) {
	added := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var b domains.Backoff
	last, attempts := added, 1
	var waits []time.Duration
	for {
		next, ok := b.NextCheck(added, last, attempts)
		if !ok {
			break
		}
		if !next.After(last) {
			t.Fatalf("next check %v is not after the last %v", next, last)
		}
		waits = append(waits, next.Sub(last))
		last, attempts = next, attempts+1
		if attempts > 1000 {
			t.Fatal("never gives up")
		}
	}
	wantStart := []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour, time.Hour}
	if !reflect.DeepEqual(waits[:len(wantStart)], wantStart) {
		t.Errorf("first waits %v, want %v", waits[:len(wantStart)], wantStart)
	}
	if want := added.Add(48 * time.Hour); !last.Equal(want) {
		t.Errorf("last check at %v, want exactly the 48 h deadline %v", last, want)
	}
	if _, ok := b.NextCheck(added, added.Add(49*time.Hour), 3); ok {
		t.Error("a check after the deadline must not schedule another")
	}
	if next, ok := b.NextCheck(added, time.Time{}, 0); !ok || !next.Equal(added.Add(time.Minute)) {
		t.Errorf("no check yet: got %v, %v; want a minute after adding", next, ok)
	}
	custom := domains.Backoff{Steps: []time.Duration{time.Second}, Every: time.Minute, GiveUpAfter: time.Hour}
	if next, _ := custom.NextCheck(added, added, 5); !next.Equal(added.Add(time.Minute)) {
		t.Errorf("custom backoff: got %v", next)
	}
}

// newFlapManager is a manager whose checker asks a FaultyDNS, with
// certificates from pebble when pebble is given (served on pebble's
// TLS-ALPN port, where pebble validates).
func newFlapManager(t *testing.T, resolver *domaintest.DNSServer, pebble *domaintest.Pebble, clk *domaintest.Clock) (*domains.Manager, *boltstore.DB) {
	t.Helper()
	return startFlapManager(t, resolver, pebble, flapOptions{now: clk.Now, profile: "default"})
}

// verifiedOnFaultyDNS starts a FaultyDNS and a manager that asks it, on a
// clock at noon that only the test moves, and adds and verifies name.
func verifiedOnFaultyDNS(t *testing.T, name string) (*domains.Manager, *boltstore.DB, *domaintest.DNSServer, *domaintest.Clock) {
	t.Helper()
	resolver := domaintest.StartFaultyDNS(t)
	clk := domaintest.NewClock(noon)
	m, db := newFlapManager(t, resolver, nil, clk)
	addVerified(t, m, resolver, name)
	return m, db, resolver, clk
}

// flapOptions tunes startFlapManager.
type flapOptions struct {
	now     func() time.Time
	profile string // pebble's certificate profile
	// renewInterval is how often certmagic's maintenance looks at the
	// certificates; zero keeps the default.
	renewInterval time.Duration
	// checkEvery, when set, makes every check due that long after the last,
	// whatever it found, so that each CheckDue round checks again.
	checkEvery time.Duration
}

func startFlapManager(t *testing.T, resolver *domaintest.DNSServer, pebble *domaintest.Pebble, o flapOptions) (*domains.Manager, *boltstore.DB) {
	t.Helper()
	db := deployedStore(t)
	cfg := domains.Config{
		Store:    db,
		Platform: dnscheck.Platform{Domain: "petstore.test", CNAMETarget: "cname.petstore.test"},
		Checker: &dnscheck.Checker{Resolvers: []string{resolver.Addr()},
			CAAIdentities: []string{"pebble.test"}, Timeout: 200 * time.Millisecond, AllowPrivateNameservers: true},
		Now:           o.now,
		AllowTestTLDs: true,
		RecheckEvery:  o.checkEvery,
		ConfirmEvery:  o.checkEvery,
	}
	if pebble != nil {
		cfg.ACME = &domains.ACME{CA: pebble.DirectoryURL(), TrustedRoots: pebble.RootsPool(), Profile: o.profile,
			TLSPort: pebble.TLSPort, DisableHTTPChallenge: true, RenewInterval: o.renewInterval}
	}
	m := domaintest.NewManager(t, cfg)
	if pebble != nil {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(pebble.TLSPort)))
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }),
			// Pebble's TLS-ALPN-01 probes end without a request.
			ErrorLog: log.New(io.Discard, "", 0),
		}
		go func() { _ = srv.Serve(tls.NewListener(ln, m.TLSConfig())) }()
		t.Cleanup(func() { srv.Close() })
	}
	return m, db
}

// warned reports whether the domain's last check holds a dns_error
// finding: a lookup that failed, which is no evidence either way.
func warned(d store.Domain) bool {
	if d.Check == nil {
		return false
	}
	for _, f := range d.Check.Findings {
		if f.Code == dnscheck.CodeDNSError {
			return true
		}
	}
	return false
}

// TestReverifyServfailKeepsDomainVerified: one SERVFAIL while the customer
// chooses Re-verify is recorded as a warning, retried within minutes, and
// changes nothing else.
func TestReverifyServfailKeepsDomainVerified(t *testing.T) {
	const name = "shop.flap.test"
	m, _, resolver, clk := verifiedOnFaultyDNS(t, name)
	ctx := context.Background()

	resolver.SetFault(domaintest.ServFail, 1)
	d, err := m.Verify(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if d.State != store.DomainVerified || d.PointsElsewhereChecks != 0 {
		t.Fatalf("a SERVFAIL during Re-verify changed the domain: %+v", d)
	}
	if !warned(d) || resolver.Faulted() == 0 {
		t.Fatalf("the failed lookup is not recorded as a warning: %+v", d.Check)
	}
	if d.NextCheckAt == nil || d.NextCheckAt.Sub(clk.Now()) > 5*time.Minute {
		t.Errorf("a failed lookup is retried at %v, want within minutes of %v", d.NextCheckAt, clk.Now())
	}
	if r := m.Route(name); r.Decision != domains.ServePublic || !m.CertificateAllowed(name) {
		t.Errorf("after a SERVFAIL: routed %v, certificate allowed %v", r.Decision, m.CertificateAllowed(name))
	}
}

// TestMovedOnlyOnEvidenceOverAnHour: answers that point elsewhere move a
// verified domain only on the third consecutive check an hour or more
// after the first; failed lookups in between neither count nor reset the
// run; an answer pointing here resets it; a moved domain comes back by
// itself.
func TestMovedOnlyOnEvidenceOverAnHour(t *testing.T) {
	const name = "shop.moving.test"
	m, db, resolver, clk := verifiedOnFaultyDNS(t, name)
	ctx := context.Background()
	state := func(step string, want string, checks int) store.Domain {
		t.Helper()
		d, err := db.Domain(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if d.State != want || d.PointsElsewhereChecks != checks {
			t.Fatalf("%s: state %s after %d checks pointing elsewhere, want %s after %d: %+v",
				step, d.State, d.PointsElsewhereChecks, want, checks, d)
		}
		return d
	}
	reverify := func() {
		t.Helper()
		if _, err := m.Verify(ctx, name); err != nil {
			t.Fatal(err)
		}
	}

	// Three quick Re-verify clicks while the record points elsewhere: three
	// checks, but not over an hour.
	resolver.SetCNAME(t, name, "old-host.example.net")
	for range 3 {
		reverify()
		clk.Advance(time.Minute)
	}
	state("three checks within minutes", store.DomainVerified, 3)
	// The record back for one check: the run starts over.
	resolver.SetCNAME(t, name, "cname.petstore.test")
	reverify()
	state("pointing here again", store.DomainVerified, 0)

	// NXDOMAIN is evidence too; SERVFAIL between is not.
	resolver.Clear(name)
	reverify() // 1
	clk.Advance(40 * time.Minute)
	resolver.SetFault(domaintest.ServFail, 1)
	reverify()
	state("a SERVFAIL in the run", store.DomainVerified, 1)
	resolver.SetFault(domaintest.NoFault, 0)
	reverify() // 2, 40 minutes after the first
	clk.Advance(19 * time.Minute)
	reverify() // 3, 59 minutes after the first
	state("three checks in 59 minutes", store.DomainVerified, 3)
	if !m.CertificateAllowed(name) {
		t.Fatal("a domain not moved yet lost its certificate permission")
	}
	clk.Advance(time.Minute)
	reverify() // 4, an hour after the first
	d := state("four checks over an hour", store.DomainMoved, 4)
	if d.MovedAt == nil || !d.MovedAt.Equal(clk.Now()) || d.NextCheckAt == nil || d.NextCheckAt.Sub(clk.Now()) != 30*time.Minute {
		t.Errorf("moved at %v, next check %v; want now and in 30 minutes", d.MovedAt, d.NextCheckAt)
	}
	if r := m.Route(name); r.Decision != domains.ServePublic || m.CertificateAllowed(name) {
		t.Errorf("moved: routed %v, certificate allowed %v; want served, no new certificate", r.Decision, m.CertificateAllowed(name))
	}

	// Still moved while lookups fail; verified by itself when the DNS is back.
	resolver.SetFault(domaintest.Drop, 1)
	clk.Set(*d.NextCheckAt)
	m.CheckDue(ctx)
	state("moved, lookups time out", store.DomainMoved, 4)
	resolver.SetFault(domaintest.NoFault, 0)
	resolver.SetCNAME(t, name, "cname.petstore.test")
	d, _ = db.Domain(ctx, name)
	clk.Set(*d.NextCheckAt)
	m.CheckDue(ctx)
	d = state("DNS back", store.DomainVerified, 0)
	if d.MovedAt != nil || d.PointsElsewhereSince != nil || !m.CertificateAllowed(name) {
		t.Errorf("back to verified but: %+v, certificate allowed %v", d, m.CertificateAllowed(name))
	}
}

// TestFlappingDNSKeepsServing: while the DNS server fails every other
// query (SERVFAIL, REFUSED, no answer, truncated) for 10 consecutive
// background checks each, the domain stays verified and TLS handshakes
// with its certificate succeed after every check. Moved afterwards, it is
// still served with that certificate until the certificate expires.
func TestFlappingDNSKeepsServing(t *testing.T) {
	slowParallel(t, "starts pebble and challtestsrv")
	challtestsrv := domaintest.StartDNS(t)
	pebble := domaintest.StartPebble(t, challtestsrv, domaintest.PebbleOptions{})
	const name = "www.flapping.test"
	// Pebble validates through challtestsrv; the checker asks the FaultyDNS.
	challtestsrv.AddA(t, "cname.petstore.test", "127.0.0.1")
	challtestsrv.SetCNAME(t, name, "cname.petstore.test")
	resolver := domaintest.StartFaultyDNS(t)
	clk := domaintest.NewClock(time.Now().UTC())
	m, db := newFlapManager(t, resolver, pebble, clk)
	ctx := context.Background()
	addVerified(t, m, resolver, name)
	domaintest.WaitFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		if d, _ := db.Domain(ctx, name); d.Certificate.State != store.CertIssued {
			return fmt.Errorf("no certificate: %+v", d.Certificate)
		}
		return nil
	})
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pebble.IssuerRootPEM(t))
	handshake := func(step string) {
		t.Helper()
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp",
			net.JoinHostPort("127.0.0.1", strconv.Itoa(pebble.TLSPort)), &tls.Config{ServerName: name, RootCAs: roots})
		if err != nil {
			t.Fatalf("%s: handshake: %v", step, err)
		}
		conn.Close()
	}
	handshake("before the flapping")

	for _, fault := range []struct {
		name  string
		fault domaintest.Fault
	}{{"SERVFAIL", domaintest.ServFail}, {"REFUSED", domaintest.Refused}, {"timeout", domaintest.Drop}, {"truncated", domaintest.Truncate}} {
		resolver.SetFault(fault.fault, 2)
		before, warnings := resolver.Faulted(), 0
		for i := 1; i <= 10; i++ {
			d, _ := db.Domain(ctx, name)
			clk.Set(*d.NextCheckAt)
			m.CheckDue(ctx)
			d, _ = db.Domain(ctx, name)
			if d.Check == nil || !d.Check.CheckedAt.After(time.Time{}) {
				t.Fatalf("%s, check %d: no check recorded", fault.name, i)
			}
			if d.State != store.DomainVerified || d.PointsElsewhereChecks != 0 {
				t.Fatalf("%s every other query, check %d: %+v", fault.name, i, d)
			}
			if warned(d) {
				warnings++
			}
			handshake(fault.name + " check " + strconv.Itoa(i))
		}
		// The faults reached the checker: the test is not passing on luck.
		if resolver.Faulted() == before || warnings == 0 {
			t.Errorf("%s: %d queries failed, %d checks warned", fault.name, resolver.Faulted()-before, warnings)
		}
		t.Logf("%s: %d of 10 checks recorded a warning", fault.name, warnings)
	}
	resolver.SetFault(domaintest.NoFault, 0)

	// Moved: still served until the certificate expires, then not.
	resolver.SetCNAME(t, name, "elsewhere.example.net")
	for i := 1; i <= 3; i++ {
		d, _ := db.Domain(ctx, name)
		clk.Set(*d.NextCheckAt)
		m.CheckDue(ctx)
	}
	d, _ := db.Domain(ctx, name)
	if d.State != store.DomainMoved || d.Certificate.NotAfter == nil {
		t.Fatalf("after 3 checks over an hour pointing elsewhere: %+v", d)
	}
	handshake("moved")
	clk.Set(d.Certificate.NotAfter.Add(time.Second))
	m.CheckDue(ctx)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp",
		net.JoinHostPort("127.0.0.1", strconv.Itoa(pebble.TLSPort)), &tls.Config{ServerName: name, RootCAs: roots})
	if err == nil {
		conn.Close()
		t.Error("a moved domain's certificate is still served after it expired")
	}
}

// realClock follows the wall clock, as certmagic's maintenance does, and
// can be set back to stand for a check made earlier.
type realClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *realClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}
func (c *realClock) set(offset time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = offset
}

// shortLivedDomain starts pebble with certificates that live lifetime,
// a manager whose maintenance looks every second and whose checks ask a
// FaultyDNS, and a verified domain with its first certificate. Its test
// runs beside others, and not with -short.
type shortLivedDomain struct {
	name     string
	m        *domains.Manager
	db       *boltstore.DB
	resolver *domaintest.DNSServer
	pebble   *domaintest.Pebble
	clk      *realClock
	roots    *x509.CertPool
	first    store.Certificate
}

func startShortLivedDomain(t *testing.T, name string, lifetime time.Duration) *shortLivedDomain {
	t.Helper()
	slowParallel(t, "starts pebble and challtestsrv, waits for a short-lived certificate's renewal or expiry")
	challtestsrv := domaintest.StartDNS(t)
	pebble := domaintest.StartPebble(t, challtestsrv, domaintest.PebbleOptions{Profiles: map[string]int{"short": int(lifetime.Seconds())}})
	// Pebble validates through challtestsrv; the checker asks the FaultyDNS.
	challtestsrv.AddA(t, "cname.petstore.test", "127.0.0.1")
	challtestsrv.SetCNAME(t, name, "cname.petstore.test")
	resolver := domaintest.StartFaultyDNS(t)
	resolver.SetCNAME(t, name, "cname.petstore.test")
	clk := &realClock{}
	m, db := startFlapManager(t, resolver, pebble, flapOptions{now: clk.now, profile: "short", renewInterval: time.Second, checkEvery: time.Millisecond})
	if _, err := m.Add(context.Background(), name, nil); err != nil {
		t.Fatal(err)
	}
	// The checker's short timeout is for the flapping to come; a loaded
	// machine can miss it before any fault, leaving the domain pending.
	for deadline := time.Now().Add(30 * time.Second); ; {
		d, err := m.Verify(context.Background(), name)
		if err == nil && d.State == store.DomainVerified {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("verify: %+v %v", d, err)
		}
	}
	first := waitCert(t, db, name, "first certificate", 20*time.Second, func(c store.Certificate) bool { return c.State == store.CertIssued })
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pebble.IssuerRootPEM(t))
	return &shortLivedDomain{name: name, m: m, db: db, resolver: resolver, pebble: pebble, clk: clk, roots: roots, first: first}
}

// serial is the serial, in hex, of the certificate a handshake gets.
func (s *shortLivedDomain) serial() (string, error) {
	// Generous: the machine may be busy, and a slow handshake is not a failed one.
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp",
		net.JoinHostPort("127.0.0.1", strconv.Itoa(s.pebble.TLSPort)), &tls.Config{ServerName: s.name, RootCAs: s.roots})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return fmt.Sprintf("%x", conn.ConnectionState().PeerCertificates[0].SerialNumber), nil
}

// check runs one background check round and returns the domain after it;
// the test fails if the round checked nothing.
func (s *shortLivedDomain) check(t *testing.T, step string) store.Domain {
	t.Helper()
	before, _ := s.db.Domain(context.Background(), s.name)
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.m.CheckDue(context.Background())
		d, err := s.db.Domain(context.Background(), s.name)
		if err != nil {
			t.Fatal(err)
		}
		if before.Check == nil || d.Check.CheckedAt.After(before.Check.CheckedAt) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no check was due", step)
		}
	}
}

func (s *shortLivedDomain) orders() int { return len(orderAdded.FindAllString(s.pebble.Log(), -1)) }

// TestRenewalDuringFlappingDNS: while the DNS server answers SERVFAIL, then
// times out, on every other query for 10 consecutive background checks,
// the certificate comes due and maintenance renews it: the domain stays
// verified, every handshake succeeds, and the new serial is served.
func TestRenewalDuringFlappingDNS(t *testing.T) {
	s := startShortLivedDomain(t, "www.renew-flap.test", 40*time.Second)
	first := s.first
	handshake := func(step string) string {
		t.Helper()
		serial, err := s.serial()
		if err != nil {
			t.Fatalf("%s: handshake: %v", step, err)
		}
		return serial
	}
	if got := handshake("before the flapping"); got != first.Serial {
		t.Fatalf("serves %s, want the first certificate %s", got, first.Serial)
	}

	faulted := s.resolver.Faulted()
	renewedAt := 0
	for i := 1; i <= 10; i++ {
		switch i {
		case 1:
			s.resolver.SetFault(domaintest.ServFail, 2)
		case 6:
			s.resolver.SetFault(domaintest.Drop, 2)
		}
		step := "check " + strconv.Itoa(i)
		d := s.check(t, step)
		if d.State != store.DomainVerified || d.PointsElsewhereChecks != 0 || !s.m.CertificateAllowed(s.name) {
			t.Fatalf("%s while the DNS flaps: %+v", step, d)
		}
		if serial := handshake(step); serial != first.Serial && renewedAt == 0 {
			renewedAt = i
		}
		if i == 5 && renewedAt == 0 {
			// Halfway: the certificate comes due now, in real time; every
			// handshake while maintenance renews it must succeed.
			deadline := *first.NotAfter
			for handshake(step+", waiting for the renewal") == first.Serial {
				if time.Now().After(deadline) {
					t.Fatalf("not renewed before the first certificate expired at %v", first.NotAfter)
				}
				time.Sleep(50 * time.Millisecond)
			}
			renewedAt = i
		}
	}
	if renewedAt == 0 || renewedAt == 10 {
		t.Fatalf("renewed after check %d; want within the 10 checks", renewedAt)
	}
	if s.resolver.Faulted() == faulted {
		t.Error("no query failed: the checks did not see the flapping")
	}
	d, err := s.m.Get(context.Background(), s.name)
	if err != nil {
		t.Fatal(err)
	}
	c := d.Certificate
	if c.State != store.CertIssued || c.Serial == first.Serial || c.Serial != handshake("after the renewal") {
		t.Errorf("after the renewal: stored %+v", c)
	}
	if last := c.Events[len(c.Events)-1]; last.Kind != store.CertEventRenewed || !strings.Contains(last.Detail, c.Serial) {
		t.Errorf("events after the renewal: %+v", c.Events)
	}
	t.Logf("renewed between check %d and check %d of the flapping", renewedAt, renewedAt+1)
}

// TestMovedDomainIsNotRenewed: a moved domain keeps its certificate but
// is no longer managed: maintenance lets it pass its renewal time and
// expire without an order reaching the CA, handshakes then fail, and once
// the DNS points here again the domain is verified and gets a new
// certificate by itself.
func TestMovedDomainIsNotRenewed(t *testing.T) {
	s := startShortLivedDomain(t, "shop.moved-expiry.test", 20*time.Second)
	first := s.first
	ctx := context.Background()

	// Three checks pointing elsewhere over an hour: the first an hour ago
	// by the manager's clock, the others now.
	s.resolver.SetCNAME(t, s.name, "elsewhere.example.net")
	s.clk.set(-61 * time.Minute)
	if d, err := s.m.Verify(ctx, s.name); err != nil || d.PointsElsewhereChecks != 1 {
		t.Fatalf("first check pointing elsewhere: %+v %v", d, err)
	}
	s.clk.set(0)
	s.check(t, "second check pointing elsewhere")
	d := s.check(t, "third check pointing elsewhere")
	if d.State != store.DomainMoved {
		t.Fatalf("after 3 checks over an hour pointing elsewhere: %+v", d)
	}
	if serial, err := s.serial(); err != nil || serial != first.Serial {
		t.Fatalf("moved: handshake %v, serial %s; want the first certificate %s", err, serial, first.Serial)
	}
	orders := s.orders()

	// Maintenance looks every second while the certificate passes its
	// renewal time and expires: it is served unchanged until then.
	var lastErr error
	for deadline := first.NotAfter.Add(10 * time.Second); ; {
		serial, err := s.serial()
		var invalid x509.CertificateInvalidError
		if errors.As(err, &invalid) && invalid.Reason == x509.Expired {
			lastErr = err
			break
		}
		if err != nil {
			t.Fatalf("moved, before its certificate expired: handshake: %v", err)
		}
		if serial != first.Serial {
			t.Fatalf("a moved domain's certificate was renewed: serves %s, was %s", serial, first.Serial)
		}
		if time.Now().After(deadline) {
			t.Fatalf("still served at %v, after its notAfter %v", time.Now(), first.NotAfter)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if time.Now().Before(*first.RenewalDueAt) {
		t.Fatalf("handshakes failed (%v) before the renewal was due at %v", lastErr, first.RenewalDueAt)
	}
	t.Logf("after expiry: %v", lastErr)
	if n := s.orders(); n != orders {
		t.Errorf("%d orders reached pebble after the move", n-orders)
	}
	// The expiry timer stores the state when notAfter passes; a handshake
	// may see the expiry a moment before it fires.
	waitCert(t, s.db, s.name, "the expired state after expiry", 10*time.Second, func(c store.Certificate) bool {
		return c.Serial == first.Serial && c.State == store.CertExpired
	})
	// The next check unloads it: no certificate at all, whatever the
	// client accepts.
	s.check(t, "a check after expiry")
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.pebble.TLSPort)),
		&tls.Config{ServerName: s.name, InsecureSkipVerify: true})
	if err == nil {
		conn.Close()
		t.Error("the expired certificate of a moved domain is still offered")
	}

	// The DNS back: verified, and a new certificate without a visitor.
	s.resolver.SetCNAME(t, s.name, "cname.petstore.test")
	if d := s.check(t, "DNS back"); d.State != store.DomainVerified {
		t.Fatalf("DNS back: %+v", d)
	}
	again := waitCert(t, s.db, s.name, "a new certificate", 30*time.Second, func(c store.Certificate) bool {
		return c.State == store.CertIssued && c.Serial != first.Serial
	})
	// Maintenance renews the expired certificate it was handed back, and
	// certmagic reports a renewal, which records it, before it puts the
	// new certificate in the cache.
	domaintest.WaitFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if serial, err := s.serial(); err != nil || serial != again.Serial {
			return fmt.Errorf("verified again: handshake %v, serial %s; want %s", err, serial, again.Serial)
		}
		return nil
	})
}
