package web_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"

	"petstore/store"
)

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

// optionsOf lists the option values of the first select matching css.
func optionsOf(t *testing.T, ctx context.Context, css string) []string {
	t.Helper()
	return run(t, ctx, "reading the choices of "+css, chromedp.Evaluate[[]string](
		fmt.Sprintf(`[...document.querySelector(%q).options].map((o) => o.value)`, css)))
}

// TestDashboardWithoutCNAMETarget: started without --domain and
// --cname-target (development), the Domains page says which flag to set
// instead of offering a form the server would refuse; with a target the
// form is there and the note is not.
func TestDashboardWithoutCNAMETarget(t *testing.T) {
	t.Parallel()
	ctx := newTab(t) // first: without chromium the test skips before starting servers
	dev := newServer(t, serverOptions{})
	if status := dev.admin(t, http.MethodPatch, "/admin/project", `{"plan":"pro"}`, nil); status != http.StatusOK {
		t.Fatalf("plan: %d", status)
	}
	openDomains(t, ctx, dev)
	waitText(t, ctx, "#target-note", "--domain")
	waitText(t, ctx, "#target-note", "--cname-target")
	if shown := run(t, ctx, "looking for the form", chromedp.Evaluate[bool](`document.getElementById('domain-form').offsetParent !== null`)); shown {
		t.Error("the add-domain form is shown although no domain can be added")
	}

	// With a target: the form, no note, and only verified domains (and the
	// default address) offered as the primary domain or a redirect target,
	// as the server accepts no others.
	prod := newServer(t, serverOptions{dns: true})
	if status := prod.admin(t, http.MethodPatch, "/admin/project", `{"plan":"pro"}`, nil); status != http.StatusOK {
		t.Fatalf("plan: %d", status)
	}
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
