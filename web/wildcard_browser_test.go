package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
	"petstore/store"
)

// TestDashboardWildcard: a wildcard's card says which names it serves
// (one label below its base, not the base, not deeper), and the redirect
// and primary choices leave it out, since the server refuses it there.
func TestDashboardWildcard(t *testing.T) {
	t.Parallel()
	ctx := newTab(t)
	ts := newServer(t, serverOptions{})
	ts.admin(t, http.MethodPatch, "/admin/project", `{"plan":"pro"}`, nil)
	// Stored directly: this server answers no ACME DNS zone, which adding
	// a wildcard needs (handlers' tests drive that path).
	now := time.Now().UTC()
	for _, name := range []string{"*.shop.example.com", "www.example.com"} {
		d := store.Domain{Name: name, State: store.DomainVerified, AddedAt: now, VerifiedAt: &now,
			Records: dnscheck.RequiredRecords(name, domaintest.CNAMETarget, nil), Certificate: store.Certificate{State: store.CertNone}}
		if err := ts.db.AddDomain(context.Background(), &d); err != nil {
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
