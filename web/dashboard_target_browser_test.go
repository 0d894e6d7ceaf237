package web_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
)

// openDomains signs in and opens the Domains page, and waits until the
// page has loaded the project (the empty list shows).
func openDomains(t *testing.T, ctx context.Context, ts *testServer) {
	t.Helper()
	do(t, ctx, "signing in",
		chromedp.Navigate(ts.url+"/dashboard/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		paste("token", testAdminToken),
		chromedp.Click(chromedp.CSS("#sign-in-form button[type=submit]")),
		chromedp.WaitVisible(chromedp.ID("view-project")),
		chromedp.Click(chromedp.ID("tab-domains")),
		chromedp.WaitVisible(chromedp.ID("domains-empty")),
	)
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

	prod := newServer(t, serverOptions{dns: true})
	openDomains(t, ctx, prod)
	do(t, ctx, "waiting for the form", chromedp.WaitVisible(chromedp.ID("domain-name")))
	if shown := run(t, ctx, "looking for the note", chromedp.Evaluate[bool](`document.getElementById('target-note').offsetParent !== null`)); shown {
		t.Error("the flag note is shown although the server knows its CNAME target")
	}
}
