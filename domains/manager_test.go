package domains_test

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
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
		_, err := strict.Add(ctx, refused.name)
		wantCode(t, err, store.EINVALID, refused.name, refused.mention)
	}
	for _, name := range []string{"shop.example.com", "me.blogspot.com", "xn--bcher-kva.de"} {
		if _, err := strict.Add(ctx, name); err != nil {
			t.Errorf("adding %s: %v", name, err)
		}
	}

	tests := managerWith(t, domains.Config{Platform: platform, AllowTestTLDs: true})
	if _, err := tests.Add(ctx, "shop.test"); err != nil {
		t.Errorf("with AllowTestTLDs, adding shop.test: %v", err)
	}
	_, err := tests.Add(ctx, "shop.invalid")
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
	_, err := m.Add(context.Background(), "shop.example.com")
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
	d, err := m.Add(ctx, "shop.deleg.test")
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

// clock is a settable time for the background schedule.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// set moves the clock to t; the manager's goroutines may read it meanwhile.
func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func newManager(t *testing.T, dns *domaintest.DNS, clk *clock) (*domains.Manager, *boltstore.DB) {
	t.Helper()
	db := deployedStore(t)
	m := domaintest.NewManager(t, domains.Config{
		Store:    db,
		Platform: dnscheck.Platform{Domain: "petstore.test", CNAMETarget: "cname.petstore.test"},
		Checker:  &dnscheck.Checker{Resolvers: []string{dns.Addr()}, Timeout: time.Second, AllowPrivateNameservers: true},
		Now:      clk.now,
	})
	return m, db
}

// noon is the fixed start of the tests' clocks.
var noon = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// newManagerAtNoon starts a DNS server and a manager that asks it, on a
// clock at noon that only the test moves.
func newManagerAtNoon(t *testing.T) (*domains.Manager, *boltstore.DB, *domaintest.DNS, *clock) {
	t.Helper()
	dns := domaintest.StartDNS(t)
	clk := &clock{t: noon}
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

	d, err := m.Add(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if d.NextCheckAt == nil || d.NextCheckAt.Sub(clk.now()) != time.Minute {
		t.Fatalf("first background check at %v, want a minute after adding", d.NextCheckAt)
	}
	// Not due yet: nothing happens.
	m.CheckDue(ctx)
	if d, _ = db.Domain(ctx, name); d.Check != nil {
		t.Fatalf("a check ran before it was due: %+v", d.Check)
	}
	// Due, DNS still missing: checked, attempt counted, next one later.
	clk.advance(time.Minute)
	m.CheckDue(ctx)
	d, _ = db.Domain(ctx, name)
	if d.Check == nil || d.State != store.DomainPending || d.CheckAttempts != 1 || d.NextCheckAt == nil || !d.NextCheckAt.After(clk.now()) {
		t.Fatalf("after a failed background check: %+v", d)
	}
	// DNS fixed: the next due check verifies it.
	dns.SetCNAME(t, name, "cname.petstore.test")
	clk.set(*d.NextCheckAt)
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
		clk.set(*d.NextCheckAt)
		m.CheckDue(ctx)
		d, _ = db.Domain(ctx, name)
		if want := map[bool]string{true: store.DomainMoved, false: store.DomainVerified}[i == 3]; d.State != want || d.Check.Verified {
			t.Fatalf("check %d after the DNS moved away: state %s, want %s: %+v", i, d.State, want, d)
		}
	}
	if span := clk.now().Sub(first); span != time.Hour || d.MovedAt == nil || d.PointsElsewhereChecks != 3 {
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
	clk.set(*d.NextCheckAt)
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
	if _, err := m.Add(ctx, "never.example.org"); err != nil {
		t.Fatal(err)
	}
	checks := 0
	for i := 0; i < 200; i++ {
		d, _ := db.Domain(ctx, "never.example.org")
		if d.NextCheckAt == nil {
			break
		}
		clk.set(*d.NextCheckAt)
		m.CheckDue(ctx)
		checks++
	}
	d, _ := db.Domain(ctx, "never.example.org")
	if d.NextCheckAt != nil || d.State != store.DomainPending {
		t.Fatalf("still scheduled after %d checks: %+v", checks, d)
	}
	if age := clk.now().Sub(d.AddedAt); age < 47*time.Hour || age > 49*time.Hour {
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
	if _, err := m.Add(ctx, "slow.example.org"); err != nil {
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
	clk.advance(29 * time.Minute)
	if steps := m.Troubleshooting(d); steps != nil {
		t.Fatalf("troubleshooting before 30 minutes: %v", steps)
	}
	clk.advance(2 * time.Minute)
	steps := strings.Join(m.Troubleshooting(d), "\n")
	for _, want := range []string{"still verifies", "CAA", "Re-verify", "CAA forbids issuance"} {
		if !strings.Contains(steps, want) {
			t.Errorf("troubleshooting lacks %q:\n%s", want, steps)
		}
	}
	// Backing off: the steps say when the next attempt starts, and do not
	// send the customer to Re-verify, which would start nothing.
	next := clk.now().Add(20 * time.Minute)
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
