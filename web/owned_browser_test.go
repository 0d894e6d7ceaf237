package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"petstore/store"
)

// TestDashboardMoveWithoutDowntime: with --acme-dns-zone the domain card
// shows the two records of a move without downtime in a group of their
// own, each with copy buttons and why; an owned domain whose certificate
// is there says the certificate is ready and the CNAME may be switched.
func TestDashboardMoveWithoutDowntime(t *testing.T) {
	t.Parallel()
	ctx := newTab(t)
	ts := newServer(t, serverOptions{acmeDNSZone: "acme.plat.test"})
	const name = "shop.example.com"
	card := domainCard(name)
	ts.admin(t, http.MethodPatch, "/admin/project", `{"plan":"pro"}`, nil)
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
