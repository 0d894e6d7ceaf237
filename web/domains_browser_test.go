package web_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"petstore/domains"
	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
	"petstore/store"
)

// TestDashboardMoveWithoutDowntime: with --acme-dns-zone the domain card
// shows the two records of a move without downtime in a group of their
// own, each with copy buttons and why; an owned domain whose certificate
// is there says the certificate is ready and the CNAME may be switched.
func TestDashboardMoveWithoutDowntime(t *testing.T) {
	t.Parallel()
	ctx, ts := newTabAndServer(t, serverOptions{acmeDNSZone: "acme.plat.test"})
	const name = "shop.example.com"
	card := domainCard(name)
	ts.planPro(t)
	var d store.Domain
	if status := ts.admin(t, http.MethodPost, "/admin/domains", `{"name":"`+name+`"}`, &d); status != http.StatusCreated || d.Delegation == nil {
		t.Fatalf("adding the domain: %d %+v", status, d)
	}
	signIn(t, ctx, ts.url+"/dashboard/#domains",
		viewLoaded("domains"),
		chromedp.WaitVisible(chromedp.CSS(card+" button.verify")),
	)
	records := waitText(t, ctx, card+" details.records", "Move a live domain without downtime")
	for _, want := range []string{"_petstore-challenge.shop", d.Delegation.Token, "_acme-challenge.shop", d.Delegation.Target, "Proves that the domain is yours", "before you switch"} {
		if !strings.Contains(records, want) {
			t.Errorf("the records lack %q:\n%s", want, records)
		}
	}
	if n := run(t, ctx, "counting copy buttons", chromedp.Evaluate[int](`document.querySelectorAll('`+card+` details.records button.copy').length`)); n != 6 {
		t.Errorf("%d copy buttons, want a name and a value for each of the 3 records", n)
	}

	// Owned, with its certificate obtained ahead (this test has no CA).
	notAfter := time.Date(2027, 2, 1, 12, 0, 0, 0, time.UTC)
	if _, err := ts.db.UpdateDomain(context.Background(), name, func(d *store.Domain) error {
		d.State = store.DomainOwned
		d.Delegation.OwnershipFound, d.Delegation.Delegated = true, true
		d.Certificate = store.Certificate{State: store.CertIssued, Issuer: "Test CA", NotAfter: &notAfter}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "reloading", chromedp.Reload())
	waitText(t, ctx, card+" .state", "Owned")
	note := waitText(t, ctx, card+" .live-note-owned", "Certificate ready: switch your CNAME when you are ready")
	if !strings.Contains(note, "first visitor") {
		t.Errorf("the owned note: %s", note)
	}
}

// TestDashboardDNSFlapsAndMoves: the domain card says in words what a
// failed lookup means (a warning, nothing changes), what checks pointing
// elsewhere mean (nothing yet; Moved after 3 over an hour), and what Moved
// means (the certificate is served until it expires, not renewed, and the
// domain comes back by itself), each after the admin API says the domain
// is in that state.
func TestDashboardDNSFlapsAndMoves(t *testing.T) {
	t.Parallel()
	ctx, ts := newTabAndServer(t, serverOptions{dns: true})
	const name = "shop.example.com"
	card := domainCard(name)
	ts.planPro(t)
	if status := ts.admin(t, http.MethodPost, "/admin/domains", `{"name":"`+name+`"}`, nil); status != http.StatusCreated {
		t.Fatalf("adding the domain: %d", status)
	}
	ts.dns.SetCNAME(t, name, domaintest.CNAMETarget)
	var d store.Domain
	verify := func(want string) {
		t.Helper()
		d = store.Domain{}
		if status := ts.admin(t, http.MethodPost, "/admin/domains/"+name+"/verify", "", &d); status != 200 || d.State != want {
			t.Fatalf("verify: %d, state %s, want %s", status, d.State, want)
		}
	}
	verify(store.DomainVerified)
	// The certificate a moved domain keeps; this test has no CA.
	notAfter := time.Date(2027, 2, 1, 12, 0, 0, 0, time.UTC)
	if _, err := ts.db.UpdateDomain(context.Background(), name, func(d *store.Domain) error {
		d.Certificate = store.Certificate{State: store.CertIssued, Issuer: "Test CA", NotAfter: &notAfter}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// A SERVFAIL: a warning, the domain stays verified.
	ts.dns.SetServfail(t, name)
	verify(store.DomainVerified)
	signIn(t, ctx, ts.url+"/dashboard/#domains",
		viewLoaded("domains"),
		chromedp.WaitVisible(chromedp.CSS(card+" button.verify")),
	)
	waitText(t, ctx, card+" .live-note", "only a warning: the domain stays Verified and keeps its certificate")
	waitText(t, ctx, card+" .finding.warning", "SERVFAIL")

	// Pointing elsewhere once: nothing changes yet, and the rule is told.
	ts.dns.Clear(t, domaintest.Servfail, name)
	ts.dns.SetCNAME(t, name, "old-host.example.net")
	do(t, ctx, "re-verifying", chromedp.Click(chromedp.CSS(card+" button.verify")))
	note := waitText(t, ctx, card+" .live-note", "found its DNS pointing elsewhere")
	if said := waitText(t, ctx, "#announcer", name+" is verified."); strings.Contains(said, "not verified") {
		t.Errorf("the screen reader hears %q", said)
	}
	for _, want := range []string{"Nothing changes for visitors yet", "at least 3 checks in a row", "at least an hour"} {
		if !strings.Contains(note, want) {
			t.Errorf("the note lacks %q:\n%s", want, note)
		}
	}

	// Two more checks, 30 minutes apart: moved at the third.
	ts.ahead.Add(int64(30 * time.Minute))
	verify(store.DomainVerified)
	ts.ahead.Add(int64(30 * time.Minute))
	do(t, ctx, "re-verifying", chromedp.Click(chromedp.CSS(card+" button.verify")))
	note = waitText(t, ctx, card+" .live-note", "marked Moved")
	ts.admin(t, http.MethodGet, "/admin/domains/"+name, "", &d)
	if d.State != store.DomainMoved {
		t.Fatalf("the API says %s", d.State)
	}
	for _, want := range []string{"still get HTTPS", "until it expires on", "not renewed", "Verified again by itself", "checks again by itself"} {
		if !strings.Contains(note, want) {
			t.Errorf("the moved note lacks %q:\n%s", want, note)
		}
	}
	waitText(t, ctx, card+" .state-help", "becomes Verified again by itself")
	// The certificate part agrees with the note: not renewed while moved.
	if cert := waitText(t, ctx, card+" .certificate", "not renewed while the domain is moved"); strings.Contains(cert, "renews by itself") {
		t.Errorf("a moved domain's certificate reads as renewing by itself:\n%s", cert)
	}
	// Expired while moved: a new one comes only with the DNS back.
	if _, err := ts.db.UpdateDomain(context.Background(), name, func(d *store.Domain) error {
		d.Certificate.State = store.CertExpired
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "re-verifying", chromedp.Click(chromedp.CSS(card+" button.verify")))
	if cert := waitText(t, ctx, card+" .certificate", "once its DNS points here again"); strings.Contains(cert, "until it is renewed") {
		t.Errorf("a moved domain's expired certificate reads as about to be renewed:\n%s", cert)
	}

	// The DNS back: verified, and the note is gone.
	ts.dns.SetCNAME(t, name, domaintest.CNAMETarget)
	do(t, ctx, "re-verifying", chromedp.Click(chromedp.CSS(card+" button.verify")))
	waitText(t, ctx, card+" .state", "Verified")
	if n := run(t, ctx, "looking for the note", chromedp.Evaluate[int](`document.querySelectorAll('`+card+` .live-note').length`)); n != 0 {
		t.Errorf("a note stays after the domain verified again")
	}
}

// TestDashboardWildcard: a wildcard's card says which names it serves
// (one label below its base, not the base, not deeper), and the redirect
// and primary choices leave it out, since the server refuses it there.
func TestDashboardWildcard(t *testing.T) {
	t.Parallel()
	ctx, ts := newTabAndServer(t, serverOptions{})
	ts.planPro(t)
	// Stored directly: this server answers no ACME DNS zone, which adding
	// a wildcard needs (handlers' tests drive that path).
	now := time.Now().UTC()
	for _, name := range []string{"*.shop.example.com", "www.example.com"} {
		d := store.Domain{Name: name, State: store.DomainVerified, AddedAt: now, VerifiedAt: &now,
			Records: dnscheck.RequiredRecords(name, domaintest.CNAMETarget, nil), Certificate: store.Certificate{State: store.CertNone}}
		if err := ts.db.AddDomain(context.Background(), &d, nil); err != nil {
			t.Fatal(err)
		}
	}
	card := domainCard("*.shop.example.com")
	signIn(t, ctx, ts.url+"/dashboard/#domains",
		viewLoaded("domains"),
		chromedp.WaitVisible(chromedp.CSS(card+" .wildcard-note")),
	)
	waitText(t, ctx, card+" .wildcard-note", "serves every name one level below shop.example.com, such as www.shop.example.com")
	// The records are folded away once verified: read them whole.
	if rec := run(t, ctx, "reading the records", chromedp.Evaluate[string](`document.querySelector('`+card+` details.records').textContent`)); !strings.Contains(rec, "*.shop") {
		t.Errorf("the records do not show the * CNAME: %q", rec)
	}
	if n := run(t, ctx, "looking for a wildcard note on a single name", chromedp.Evaluate[int](`document.querySelectorAll('`+domainCard("www.example.com")+` .wildcard-note').length`)); n != 0 {
		t.Error("a single name is described as a wildcard")
	}
	do(t, ctx, "adding a redirect row", chromedp.Click(chromedp.ID("add-redirect")), chromedp.WaitVisible(chromedp.CSS("#redirects .redirect")))
	for _, sel := range []string{"#primary", "#redirects .redirect-from", "#redirects .redirect-to"} {
		opts := run(t, ctx, "reading "+sel, chromedp.Evaluate[string](`Array.from(document.querySelector('`+sel+`').options).map((o) => o.value).join(' ')`))
		if strings.Contains(opts, "*.") {
			t.Errorf("%s offers the wildcard: %q", sel, opts)
		}
		if sel == "#redirects .redirect-from" && !strings.Contains(opts, "www.example.com") {
			t.Errorf("%s lacks the single name: %q", sel, opts)
		}
	}
}

// openDomains signs in and opens the Domains page, and waits until the
// page has loaded the project, the domains and the settings.
func openDomains(t *testing.T, ctx context.Context, ts *testServer) {
	t.Helper()
	signIn(t, ctx, ts.url+"/dashboard/",
		chromedp.WaitVisible(chromedp.ID("view-project")),
		chromedp.Click(chromedp.ID("tab-domains")),
		viewLoaded("domains"),
	)
}

// openDevelopmentDomains starts a server with no --domain and no
// --cname-target, outside development mode (as on a public address), on
// the Pro plan, and opens its Domains page.
func openDevelopmentDomains(t *testing.T) context.Context {
	t.Helper()
	ctx, dev := newTabAndServer(t, serverOptions{})
	dev.planPro(t)
	openDomains(t, ctx, dev)
	return ctx
}

// optionsOf lists the option values of the first select matching css.
func optionsOf(t *testing.T, ctx context.Context, css string) []string {
	t.Helper()
	return run(t, ctx, "reading the choices of "+css, chromedp.Evaluate[[]string](
		fmt.Sprintf(`[...document.querySelector(%q).options].map((o) => o.value)`, css)))
}

// TestDashboardWithoutCNAMETarget: started without --domain and
// --cname-target outside development mode, the Domains page says which flag to set
// instead of offering a form the server would refuse; with a target the
// form is there and the note is not.
func TestDashboardWithoutCNAMETarget(t *testing.T) {
	t.Parallel()
	ctx := openDevelopmentDomains(t)
	waitText(t, ctx, "#target-note", "--domain")
	waitText(t, ctx, "#target-note", "--cname-target")
	if shown := run(t, ctx, "looking for the form", chromedp.Evaluate[bool](`document.getElementById('domain-form').offsetParent !== null`)); shown {
		t.Error("the add-domain form is shown although no domain can be added")
	}

	// With a target: the form, no note, and only verified domains (and the
	// default address) offered as the primary domain or a redirect target,
	// as the server accepts no others.
	prod := newServer(t, serverOptions{dns: true})
	prod.planPro(t)
	for _, name := range []string{"live.example.com", "pending.example.com"} {
		if status := prod.admin(t, http.MethodPost, "/admin/domains", `{"name":"`+name+`"}`, nil); status != http.StatusCreated {
			t.Fatalf("adding %s: %d", name, status)
		}
	}
	if _, err := prod.db.UpdateDomain(context.Background(), "live.example.com", func(d *store.Domain) error { d.State = store.DomainVerified; return nil }); err != nil {
		t.Fatal(err)
	}
	openDomains(t, ctx, prod)
	do(t, ctx, "waiting for the form", chromedp.WaitVisible(chromedp.ID("domain-name")))
	if shown := run(t, ctx, "looking for the note", chromedp.Evaluate[bool](`document.getElementById('target-note').offsetParent !== null`)); shown {
		t.Error("the flag note is shown although the server knows its CNAME target")
	}
	do(t, ctx, "adding a redirect row", chromedp.Click(chromedp.ID("add-redirect")), chromedp.WaitVisible(chromedp.CSS("#redirects .redirect")))
	for _, css := range []string{"#primary", "#redirects .redirect-to"} {
		got := optionsOf(t, ctx, css)
		if !slices.Contains(got, "live.example.com") || slices.Contains(got, "pending.example.com") {
			t.Errorf("%s offers %v: want live.example.com and not pending.example.com", css, got)
		}
	}
	if got := optionsOf(t, ctx, "#redirects .redirect-from"); !slices.Contains(got, "pending.example.com") {
		t.Errorf("redirect sources %v: a pending domain may still redirect", got)
	}
}

// TestDashboardDevelopmentAddsDomains: in development mode (a `go run .`
// on loopback), a new user adds a domain from the dashboard without
// restart flags and sees its records, pointing at the placeholder target,
// with a note that says what is simulated.
func TestDashboardDevelopmentAddsDomains(t *testing.T) {
	t.Parallel()
	ctx, dev := newTabAndServer(t, serverOptions{development: true})
	dev.planPro(t)
	openDomains(t, ctx, dev)
	note := waitText(t, ctx, "#development-note", "simulated")
	for _, want := range []string{"localhost", "placeholder", "Verify asks real DNS", "--cname-target"} {
		if !strings.Contains(note, want) {
			t.Errorf("the development note lacks %q: %s", want, note)
		}
	}
	if shown(t, ctx, "target-note") {
		t.Error("development shows the note to restart with flags")
	}
	const name = "shop.example.com"
	do(t, ctx, "adding a domain", submitIn("domains", "domain-form",
		chromedp.SetValue(chromedp.ID("domain-name"), name),
		chromedp.WaitVisible(chromedp.CSS(domainCard(name)+" .record"))))
	records := textOf(t, ctx, domainCard(name)+" .record")
	for _, want := range []string{"shop", domains.DevelopmentTarget} {
		if !strings.Contains(records, want) {
			t.Errorf("the records lack %q:\n%s", want, records)
		}
	}
	if status := dev.admin(t, http.MethodGet, "/admin/domains/"+name, "", nil); status != http.StatusOK {
		t.Errorf("the domain added from the dashboard: %d", status)
	}
	screenshot(t, ctx, "development-domains", desktopWidth, desktopHeight, false)
}
