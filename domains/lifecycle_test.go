package domains_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"

	"petstore/domains"
	"petstore/domains/certs"
	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/boltstore"
)

// acmeManager is a manager with certificates from pebble, on a fresh
// store. checkDNS is what the manager's own DNS check sees; pebble
// resolves through the DNS it was started with.
func acmeManager(t *testing.T, checkDNS *domaintest.DNS, pebble *domaintest.Pebble, clk *domaintest.Clock, a domains.ACME, opts ...func(*domains.Config)) (*domains.Manager, *boltstore.DB) {
	t.Helper()
	db := deployedStore(t)
	if a.CA == "" {
		a.CA = pebble.DirectoryURL()
	}
	if a.Profile == "" {
		a.Profile = "default"
	}
	a.TrustedRoots, a.HTTPPort, a.TLSPort = pebble.RootsPool(), pebble.HTTPPort, pebble.TLSPort
	now := time.Now
	if clk != nil {
		now = clk.Now
	}
	cfg := domains.Config{
		Store:    db,
		Platform: dnscheck.Platform{Domain: "petstore.test", CNAMETarget: "cname.petstore.test"},
		Checker:  &dnscheck.Checker{Resolvers: []string{checkDNS.Addr()}, Timeout: time.Second},
		ACME:     &a,
		Now:      now,
		// The tests start due attempts themselves (TendCertificates).
		TickEvery: time.Hour,
	}
	for _, o := range opts {
		o(&cfg)
	}
	return domaintest.NewManager(t, cfg), db
}

func waitCert(t *testing.T, db *boltstore.DB, name, what string, within time.Duration, cond func(store.Certificate) bool) store.Certificate {
	t.Helper()
	var d store.Domain
	domaintest.WaitFor(t, within, 50*time.Millisecond, func() error {
		var err error
		if d, err = db.Domain(context.Background(), name); err != nil || !cond(d.Certificate) {
			return fmt.Errorf("%s: certificate %+v, %v", what, d.Certificate, err)
		}
		return nil
	})
	return d.Certificate
}

// cnameServer is a test DNS server that can point a name elsewhere:
// domaintest's DNS and FaultyDNS.
type cnameServer interface {
	SetCNAME(tb testing.TB, name, target string)
}

// eventTypes lists the types of the events of kind in db's outbox, oldest
// first.
func eventTypes(t *testing.T, db store.Events, kind string) []string {
	t.Helper()
	events, err := db.Events(context.Background(), store.EventFilter{Kinds: []string{kind}})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
	}
	return types
}

// addVerified points name at the platform on dns, adds it and verifies it.
func addVerified(t *testing.T, m *domains.Manager, dns cnameServer, name string) store.Domain {
	t.Helper()
	dns.SetCNAME(t, name, "cname.petstore.test")
	if _, err := m.Add(context.Background(), name, nil); err != nil {
		t.Fatal(err)
	}
	d, err := m.Verify(context.Background(), name)
	if err != nil || d.State != store.DomainVerified {
		t.Fatalf("verify %s: %+v %v", name, d, err)
	}
	return d
}

// startOurDNS starts the DNS server the checker asks, where the CNAME
// target cname.petstore.test has an address.
func startOurDNS(t *testing.T) *domaintest.DNS {
	dns := domaintest.StartDNS(t)
	dns.AddA(t, "cname.petstore.test", "127.0.0.1")
	return dns
}

// startCA starts our DNS server and pebble; with a lifetime, pebble's
// profile "short" gives certificates that live that many seconds. The
// test runs beside others (it mostly waits on the CA, or on a
// certificate's renewal or expiry), and not with -short.
func startCA(t *testing.T, lifetime int) (*domaintest.DNS, *domaintest.Pebble) {
	t.Helper()
	slowParallel(t, "starts pebble")
	var o domaintest.PebbleOptions
	if lifetime > 0 {
		o.Profiles = map[string]int{"short": lifetime}
	}
	dns := startOurDNS(t)
	return dns, domaintest.StartPebble(t, dns, o)
}

// startCADNS starts a DNS server of the CA's own, where a name has no
// address unless a test gives it one: the CA sees other records than the
// checker.
func startCADNS(t *testing.T) *domaintest.DNS {
	dns := domaintest.StartDNS(t)
	dns.SetDefaultIPv4(t, "")
	return dns
}

// TestRenewalWithoutVisitors: a certificate that lives 40 seconds is
// renewed by maintenance before it expires, with no TLS client at all.
func TestRenewalWithoutVisitors(t *testing.T) {
	dns, pebble := startCA(t, 40)
	m, db := acmeManager(t, dns, pebble, nil, domains.ACME{Profile: "short", RenewInterval: time.Second})
	const name = "renew.example.org"
	addVerified(t, m, dns, name)

	first := waitCert(t, db, name, "first certificate", 20*time.Second, func(c store.Certificate) bool { return c.State == store.CertIssued })
	if first.Serial == "" || first.NotAfter == nil || first.NotAfter.Sub(*first.NotBefore) > time.Minute ||
		first.RenewalDueAt == nil || first.RenewalDueAt.After(*first.NotAfter) || first.IssuerCA != pebble.DirectoryURL() ||
		len(first.Names) != 1 || first.Names[0] != name || len(first.Events) != 1 || first.Events[0].Kind != store.CertEventObtained {
		t.Fatalf("details of the first certificate: %+v", first)
	}
	renewed := waitCert(t, db, name, "renewal", time.Until(*first.NotAfter), func(c store.Certificate) bool {
		return c.Serial != first.Serial && c.State == store.CertIssued
	})
	if time.Now().After(*first.NotAfter) {
		t.Fatalf("renewed only after the first certificate expired at %v", first.NotAfter)
	}
	if last := renewed.Events[len(renewed.Events)-1]; last.Kind != store.CertEventRenewed || !strings.Contains(last.Detail, renewed.Serial) {
		t.Errorf("events after the renewal: %+v", renewed.Events)
	}
	if renewed.LastAttempt == nil || !renewed.LastAttempt.Renewal || renewed.LastAttempt.Error != "" {
		t.Errorf("last attempt: %+v", renewed.LastAttempt)
	}
	// The new certificate is the one in storage.
	iss := certmagic.ACMEIssuer{CA: pebble.DirectoryURL()}
	pemBytes, err := certs.Storage(db).Load(context.Background(), certmagic.StorageKeys.SiteCert(iss.IssuerKey(), name))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(certSerials(t, pemBytes), renewed.Serial) {
		t.Errorf("storage holds %s, want the renewed serial %s", certSerials(t, pemBytes), renewed.Serial)
	}
	// And the API answer says so, expiry included.
	d, err := m.Get(context.Background(), name)
	if err != nil || d.Certificate.State != store.CertIssued || d.Certificate.Serial != renewed.Serial {
		t.Errorf("domain answer: %+v %v", d.Certificate, err)
	}
}

// TestCertificateStateIsHonest: a certificate past its notAfter is
// recorded and shown expired, and one whose file left storage is recorded
// as removed and requested again.
func TestCertificateStateIsHonest(t *testing.T) {
	dns, pebble := startCA(t, 0)
	clk := domaintest.NewClock(time.Now())
	m, db := acmeManager(t, dns, pebble, clk, domains.ACME{})
	ctx := context.Background()
	const name = "honest.example.org"
	addVerified(t, m, dns, name)
	c := waitCert(t, db, name, "certificate", 20*time.Second, func(c store.Certificate) bool { return c.State == store.CertIssued })

	// Reads are pure: the certificate loop records what changed, and the
	// answer shows what it stored.
	clk.Set(c.NotAfter.Add(time.Second))
	m.TendCertificates(ctx)
	if d, _ := m.Get(ctx, name); d.Certificate.State != store.CertExpired {
		t.Errorf("past notAfter the certificate is %q", d.Certificate.State)
	}
	if d, _ := db.Domain(ctx, name); d.Certificate.State != store.CertExpired {
		t.Errorf("past notAfter the stored certificate is %q", d.Certificate.State)
	}
	clk.Set(time.Now())

	iss := certmagic.ACMEIssuer{CA: pebble.DirectoryURL()}
	if err := certs.Storage(db).Delete(ctx, certmagic.StorageKeys.CertsSitePrefix(iss.IssuerKey(), name)); err != nil {
		t.Fatal(err)
	}
	m.TendCertificates(ctx)
	if d, _ := m.Get(ctx, name); d.Certificate.State == store.CertIssued || d.Certificate.State == store.CertExpired {
		t.Errorf("with its file removed the certificate is still %q", d.Certificate.State)
	}
	again := waitCert(t, db, name, "a new certificate", 20*time.Second, func(c store.Certificate) bool {
		return c.State == store.CertIssued && c.Serial != "" && len(c.Events) == 3
	})
	kinds := []string{}
	for _, e := range again.Events {
		kinds = append(kinds, e.Kind)
	}
	if got := strings.Join(kinds, ","); got != "obtained,removed,obtained" || again.Serial == c.Serial {
		t.Errorf("events %s, serial %s after %s; want obtained,removed,obtained and a new serial", got, again.Serial, c.Serial)
	}
}

// TestExpiryIsStoredWithoutRequests: a certificate that maintenance does
// not renew is recorded expiring (once) when a sixth of its lifetime is
// left, and expired when its notAfter passes, each by the certificate
// loop's timer, with no request to the service and no round of the loop's
// tick; every change of its state reached the hook, in order, and each
// has its event in the outbox.
func TestExpiryIsStoredWithoutRequests(t *testing.T) {
	dns, pebble := startCA(t, 18)
	var mu sync.Mutex
	var changes []string
	m, db := acmeManager(t, dns, pebble, nil, domains.ACME{Profile: "short", RenewInterval: time.Hour}, func(c *domains.Config) {
		c.OnCertificateChange = func(_ context.Context, ch certs.Change) {
			mu.Lock()
			defer mu.Unlock()
			step := ch.From + ">" + ch.To
			if ch.Event != nil {
				step += ":" + ch.Event.Kind
			}
			if ch.Domain != "expire.example.org" || ch.At.IsZero() || ch.Certificate.State != ch.To {
				t.Errorf("change %+v", ch)
			}
			changes = append(changes, step)
		}
	})
	ctx := context.Background()
	const name = "expire.example.org"
	addVerified(t, m, dns, name)
	c := waitCert(t, db, name, "certificate", 20*time.Second, func(c store.Certificate) bool { return c.State == store.CertIssued })
	lifetime := c.NotAfter.Sub(*c.NotBefore)
	if c.NotAfter == nil || lifetime > time.Minute {
		t.Fatalf("not a short-lived certificate: %+v", c)
	}
	expiringAt := certs.ExpiringAt(c)
	if want := c.NotAfter.Add(-lifetime / 6); expiringAt == nil || !expiringAt.Equal(want) || c.ExpiringNotedAt != nil {
		t.Fatalf("a certificate living %v is announced at %v, want %v (a sixth of its lifetime before notAfter %v); noted %v", lifetime, expiringAt, want, c.NotAfter, c.ExpiringNotedAt)
	}
	expiring := waitCert(t, db, name, "expiring recorded", time.Until(*c.NotAfter), func(c store.Certificate) bool { return c.ExpiringNotedAt != nil })
	last := expiring.Events[len(expiring.Events)-1]
	if expiring.State != store.CertIssued || last.Kind != store.CertEventExpiring || !last.At.Equal(*expiring.ExpiringNotedAt) ||
		last.At.Before(*expiringAt) || !last.At.Before(*c.NotAfter) || !strings.Contains(last.Detail, c.Serial) {
		t.Errorf("expiring record %+v (events %+v), certificate %+v", expiring, expiring.Events, c)
	}
	// Once per certificate: more rounds before notAfter record nothing new.
	m.TendCertificates(ctx)
	m.TendCertificates(ctx)
	expired := waitCert(t, db, name, "expiry recorded", time.Until(*c.NotAfter)+10*time.Second, func(c store.Certificate) bool { return c.State == store.CertExpired })
	if expired.UpdatedAt == nil || expired.UpdatedAt.Before(*c.NotAfter) || expired.Serial != c.Serial {
		t.Errorf("expired record %+v, certificate %+v", expired, c)
	}
	m.TendCertificates(ctx)
	// The hook runs after the change is stored: wait for it.
	domaintest.WaitFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		if got := strings.Join(changes, ","); got != "none>pending,pending>issued:obtained,issued>issued:expiring,issued>expired" {
			return fmt.Errorf("the hook saw %s", got)
		}
		return nil
	})
	// The outbox has the events, written with the state they announce.
	types := eventTypes(t, db, "certificate")
	if got, want := strings.Join(types, ","), strings.Join([]string{store.EventCertIssued, store.EventCertExpiring, store.EventCertExpired}, ","); got != want {
		t.Errorf("certificate events in the outbox: %s, want %s", got, want)
	}
}

var (
	orderAdded   = regexp.MustCompile(`Added order "([^"]+)"`)
	invalidAuthz = regexp.MustCompile(`authz \S+ set INVALID`)
)

// TestIssuanceBacksOff: while the CA still sees the old record, ten
// Verify and Re-verify calls within 5 s make one attempt at a time, later
// attempts wait longer, the failed validations stay within the CA's hourly
// limit, and the domain says when and why it tries next. Pebble's log is
// the witness of the orders and of the failed validations.
func TestIssuanceBacksOff(t *testing.T) {
	slowParallel(t, "starts pebble")
	ourDNS, caDNS := startOurDNS(t), startCADNS(t)
	const name = "slowdns.example.org"
	// The CA's resolver still has the record from before the customer's
	// change: a name with no address.
	caDNS.SetCNAME(t, name, "old-host.example.net")
	pebble := domaintest.StartPebble(t, caDNS, domaintest.PebbleOptions{})
	clk := domaintest.NewClock(time.Now())
	m, db := acmeManager(t, ourDNS, pebble, clk, domains.ACME{})
	ctx := context.Background()

	ourDNS.SetCNAME(t, name, "cname.petstore.test")
	if _, err := m.Add(ctx, name, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 10 {
		d, err := m.Verify(ctx, name)
		if err != nil || d.State != store.DomainVerified {
			t.Fatalf("verify %d: %+v %v", i, d, err)
		}
		// Let the first attempt fail, so that the later calls meet the
		// back-off as well as the attempt in flight.
		if i == 4 {
			waitCert(t, db, name, "first attempt", 20*time.Second, func(c store.Certificate) bool { return c.NextAttemptAt != nil })
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("10 calls took %v", took)
	}
	c := waitCert(t, db, name, "first attempt", 20*time.Second, func(c store.Certificate) bool { return c.NextAttemptAt != nil })
	orders := orderAdded.FindAllString(pebble.Log(), -1)
	if len(orders) == 0 {
		t.Fatalf("no order reached pebble:\n%s", pebble.Log())
	}
	assertSequentialOrders(t, pebble.Log())
	if c.State != store.CertFailed || c.FailedAttempts != 1 || c.NextAttemptAt.Sub(c.LastAttempt.At) != time.Minute {
		t.Fatalf("after the first failed attempt: %+v", c)
	}
	// Every validation pebble failed is on the record: the Verify calls
	// after the failure started nothing, and the history the hourly limit
	// counts on was kept.
	failed := len(invalidAuthz.FindAllString(pebble.Log(), -1))
	if failed != len(c.FailedValidations) || len(c.Events) != 1 {
		t.Fatalf("pebble failed %d validations, the domain records %d and events %+v", failed, len(c.FailedValidations), c.Events)
	}
	type attemptFailures struct {
		at     time.Time
		failed int
	}
	history := []attemptFailures{{c.LastAttempt.At, failed}}
	if !strings.Contains(c.NextAttemptReason, "still sees the old record") || !strings.Contains(c.NextAttemptReason, "TTL (") {
		t.Errorf("reason: %q", c.NextAttemptReason)
	}
	if d, _ := m.Get(ctx, name); d.Certificate.NextAttemptAt == nil {
		t.Error("the domain answer does not say when the next attempt is")
	}
	t.Logf("one attempt made %d orders (one per challenge type tried) and %d failed validations", len(orders), len(c.FailedValidations))

	// Each later attempt waits twice as long as the one before, unless the
	// hourly limit of failed validations makes it wait longer still.
	delays := []time.Duration{time.Minute}
	limited := false
	for attempt := 2; attempt <= 4; attempt++ {
		// Not due yet: a round of the certificate loop starts nothing.
		m.TendCertificates(ctx)
		if n := len(orderAdded.FindAllString(pebble.Log(), -1)); n != len(orders) {
			t.Fatalf("attempt %d started before it was due", attempt)
		}
		clk.Set(*c.NextAttemptAt)
		m.TendCertificates(ctx)
		c = waitCert(t, db, name, "next attempt", 20*time.Second, func(c store.Certificate) bool { return c.FailedAttempts == attempt && c.NextAttemptAt != nil })
		orders = orderAdded.FindAllString(pebble.Log(), -1)
		delay := c.NextAttemptAt.Sub(c.LastAttempt.At)
		delays = append(delays, delay)
		t.Logf("attempt %d: %d orders so far, %d failed validations in the hour, next in %v", attempt, len(orders), len(c.FailedValidations), delay)
		if backoff := time.Minute << (attempt - 1); delay < backoff {
			t.Errorf("attempt %d: next after %v, want at least %v", attempt, delay, backoff)
		}
		if before := delays[len(delays)-2]; delay < before {
			t.Errorf("attempt %d: next after %v, sooner than the %v before", attempt, delay, before)
		}
		if strings.Contains(c.NextAttemptReason, "per hour") {
			limited = true
			if first := c.FailedValidations[0]; c.NextAttemptAt.Before(first.Add(time.Hour)) && len(c.FailedValidations) > 3 {
				t.Errorf("limited, yet the next attempt at %v comes before the hour of %v ends", c.NextAttemptAt, first)
			}
		}
		if len(c.FailedValidations) > 5 {
			t.Errorf("%d failed validations within the hour", len(c.FailedValidations))
		}
		// Pebble's count, by the time of each attempt: never more than 5
		// failed validations within an hour.
		now := len(invalidAuthz.FindAllString(pebble.Log(), -1))
		history = append(history, attemptFailures{c.LastAttempt.At, now - failed})
		failed = now
		inHour := 0
		for _, h := range history {
			if h.at.After(c.LastAttempt.At.Add(-time.Hour)) {
				inHour += h.failed
			}
		}
		if inHour > 5 {
			t.Errorf("attempt %d: pebble failed %d validations in the hour before it: %+v", attempt, inHour, history)
		}
	}
	assertSequentialOrders(t, pebble.Log())
	if !limited {
		t.Errorf("the hourly limit never set the time; delays %v", delays)
	}
	t.Logf("delays %v", delays)
}

// assertSequentialOrders checks in pebble's log that every order ended
// (invalid or issued) before the next one was created.
func assertSequentialOrders(t *testing.T, log string) {
	t.Helper()
	open := ""
	for _, line := range strings.Split(log, "\n") {
		if m := orderAdded.FindStringSubmatch(line); m != nil {
			if open != "" {
				t.Fatalf("order %s created while order %s was in flight", m[1], open)
			}
			open = m[1]
		}
		if open != "" && strings.Contains(line, open) && (strings.Contains(line, "set INVALID") || strings.Contains(line, "Issued certificate")) {
			open = ""
		}
	}
}

// TestIssuerFallback: with the first CA unreachable, the certificate comes
// from the next one, and the details name it.
func TestIssuerFallback(t *testing.T) {
	dns, pebble := startCA(t, 0)
	const unreachable = "https://127.0.0.1:1/dir"
	m, db := acmeManager(t, dns, pebble, nil, domains.ACME{CA: unreachable, FallbackCAs: []string{pebble.DirectoryURL()}})
	const name = "fallback.example.org"
	addVerified(t, m, dns, name)
	c := waitCert(t, db, name, "certificate from the second CA", 30*time.Second, func(c store.Certificate) bool { return c.State == store.CertIssued })
	if c.IssuerCA != pebble.DirectoryURL() || !strings.Contains(c.Events[0].Detail, pebble.DirectoryURL()) {
		t.Errorf("issuer CA %q, events %+v; want %s", c.IssuerCA, c.Events, pebble.DirectoryURL())
	}
	if !strings.Contains(pebble.Log(), "Issued certificate") {
		t.Error("pebble issued nothing")
	}
}

// certSerials is the serial of the first certificate in a PEM chain, in hex.
func certSerials(t *testing.T, chain []byte) string {
	t.Helper()
	block, _ := pem.Decode(chain)
	if block == nil {
		t.Fatal("no PEM certificate")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", leaf.SerialNumber)
}

// TestTroubleshootingNamesTheCAsIdentities: without --acme-caa-identity
// the troubleshooting steps name the issuer domains the CA announces in
// its directory (Pebble: pebble.letsencrypt.org), the ones the CAA check
// uses, not a vague "the certificate authority".
func TestTroubleshootingNamesTheCAsIdentities(t *testing.T) {
	if testing.Short() {
		t.Skip("starts pebble")
	}
	ourDNS, caDNS := startOurDNS(t), startCADNS(t)
	pebble := domaintest.StartPebble(t, caDNS, domaintest.PebbleOptions{})
	clk := domaintest.NewClock(time.Now())
	m, db := acmeManager(t, ourDNS, pebble, clk, domains.ACME{})
	const name = "nocert.example.org"
	addVerified(t, m, ourDNS, name)
	// The CA cannot reach the name: the attempt fails and no certificate comes.
	waitCert(t, db, name, "a failed attempt", 20*time.Second, func(c store.Certificate) bool { return c.State == store.CertFailed })
	clk.Advance(31 * time.Minute)
	d, err := m.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	steps := strings.Join(m.Troubleshooting(d), "\n")
	if !strings.Contains(steps, "allow pebble.letsencrypt.org;") {
		t.Errorf("troubleshooting does not name the CA's CAA identity:\n%s", steps)
	}
}

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
		if _, err := m.Add(ctx, name, nil); err != nil {
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
