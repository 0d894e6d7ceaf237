package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"petstore/domains/domaintest"
	"petstore/store"
)

// TestDashboardDNSFlapsAndMoves: the domain card says in words what a
// failed lookup means (a warning, nothing changes), what checks pointing
// elsewhere mean (nothing yet; Moved after 3 over an hour), and what Moved
// means (the certificate is served until it expires, not renewed, and the
// domain comes back by itself), each after the admin API says the domain
// is in that state.
func TestDashboardDNSFlapsAndMoves(t *testing.T) {
	t.Parallel()
	ctx := newTab(t)
	ts := newServer(t, serverOptions{dns: true})
	const name = "shop.example.com"
	card := domainCard(name)
	ts.admin(t, http.MethodPatch, "/admin/project", `{"plan":"pro"}`, nil)
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
