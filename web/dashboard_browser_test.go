package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"petstore/domains/domaintest"
	"petstore/store"
)

// focusedElement describes the element with the keyboard focus: its id,
// else its role, else its classes.
func focusedElement(t *testing.T, ctx context.Context) string {
	t.Helper()
	return run(t, ctx, "reading the focus", chromedp.Evaluate[string](`(() => {
		const el = document.activeElement;
		return el.id || el.getAttribute('role') || el.className;
	})()`))
}

// viewLoaded waits until a dashboard view is shown with its data loaded:
// the page marks a view aria-busy (and inert) while it loads, and an edit
// made before the data arrives would be overwritten by it.
func viewLoaded(name string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS("#view-" + name + ":not([aria-busy])"))
}

// submitIn opens a dashboard view, fills in its form with fill, submits it
// and goes on with then.
func submitIn(view, form string, fill chromedp.Action[chromedp.Void], then ...chromedp.Action[chromedp.Void]) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(append([]chromedp.Action[chromedp.Void]{
		chromedp.Click(chromedp.ID("tab-" + view)),
		viewLoaded(view),
		fill,
		submit(form),
	}, then...)...)
}

// createKey creates an API key named name with the dashboard's form and
// checks that the secret it shows authenticates.
func createKey(t *testing.T, ctx context.Context, ts *testServer, name string) {
	t.Helper()
	do(t, ctx, "creating the API key "+name, submitIn("api-keys", "key-form",
		chromedp.SendKeys(chromedp.ID("key-name"), name),
		chromedp.WaitVisible(chromedp.ID("new-key"))))
	secret := run(t, ctx, "reading the secret", chromedp.Value(chromedp.ID("new-key-secret")))
	if status, _, b := ts.call(t, http.MethodPost, "/categories", `{"name":"Dogs"}`, map[string]string{"X-API-Key": secret}); status != http.StatusCreated {
		t.Errorf("the secret shown does not authenticate: %d %s", status, b)
	}
}

// domainCard is the CSS selector of a domain's card on the Domains page.
func domainCard(name string) string { return fmt.Sprintf(`li.domain[data-name=%q]`, name) }

// TestDashboard walks the dashboard as an operator would, in a real
// browser against the real server and a real DNS server: sign in, create
// an API key, move to the Pro plan, add a domain and read its record,
// verify it (wrong first, then right), set the primary domain and a
// redirect, and remove a domain. Each step is checked through the admin API
// too, so the page cannot merely look right.
func TestDashboard(t *testing.T) {
	t.Parallel()
	ctx, ts := newTabAndServer(t, serverOptions{dns: true})

	// Sign-in: a wrong token is refused in words; the right one opens the
	// app and lives in sessionStorage only, never in a cookie.
	do(t, ctx, "opening the dashboard", chromedp.Navigate(ts.url+"/dashboard/"), chromedp.WaitVisible(chromedp.ID("token")))
	do(t, ctx, "signing in with a wrong token",
		chromedp.SendKeys(chromedp.ID("token"), "pat_wrong"),
		submit("sign-in-form"),
	)
	waitText(t, ctx, "#sign-in-error", "not accepted")
	do(t, ctx, "signing in",
		paste("token", domaintest.AdminToken),
		submit("sign-in-form"),
		chromedp.WaitVisible(chromedp.ID("view-project")),
	)
	if got := run(t, ctx, "reading sessionStorage", chromedp.Evaluate[string](`sessionStorage.getItem('petstore.adminToken')`)); got != domaintest.AdminToken {
		t.Errorf("sessionStorage holds %q, want the token", got)
	}
	if c := run(t, ctx, "reading cookies", chromedp.Evaluate[string](`document.cookie`)); c != "" {
		t.Errorf("the dashboard set cookies: %q", c)
	}
	// A reload keeps the session (same tab), and the project shows.
	do(t, ctx, "reloading", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("view-project")))
	var project struct{ Plan, DefaultAddress string }
	ts.admin(t, http.MethodGet, "/admin/project", "", &project)
	waitText(t, ctx, "#project-address", project.DefaultAddress)

	// API keys: the secret is shown once and works.
	createKey(t, ctx, ts, "browser test")
	waitText(t, ctx, "#keys tbody", "browser test")
	do(t, ctx, "dismissing the secret", chromedp.Click(chromedp.ID("new-key-done")), chromedp.WaitNotVisible(chromedp.ID("new-key")))
	if v := run(t, ctx, "reading the secret field", chromedp.Value(chromedp.ID("new-key-secret"))); v != "" {
		t.Errorf("the secret stays in the page after it was dismissed")
	}

	// On the free plan the Domains page says why domains need Pro, and
	// offers no form the server would refuse (TestDashboardFirstRun reads
	// the note).
	do(t, ctx, "opening the domains on the free plan", chromedp.Click(chromedp.ID("tab-domains")), viewLoaded("domains"))
	waitText(t, ctx, "#plan-note", "Custom domains need the Pro plan")

	// The plan goes to pro.
	do(t, ctx, "choosing the Pro plan", submitIn("project", "project-form",
		chromedp.SetValue(chromedp.ID("project-plan"), "pro")))
	waitText(t, ctx, "#project-status", "Saved")
	ts.admin(t, http.MethodGet, "/admin/project", "", &project)
	if project.Plan != "pro" {
		t.Fatalf("plan is %q after saving pro", project.Plan)
	}

	// Add: the exact CNAME record to create, with copy buttons.
	shop := domainCard("shop.example.com")
	do(t, ctx, "adding shop.example.com", submitIn("domains", "domain-form",
		chromedp.SetValue(chromedp.ID("domain-name"), "Shop.Example.com."),
		chromedp.WaitVisible(chromedp.CSS(shop+" .record"))))
	record := textOf(t, ctx, shop+" .record")
	for _, want := range []string{"CNAME", "shop", domaintest.CNAMETarget, "3600"} {
		if !strings.Contains(record, want) {
			t.Errorf("the record shown lacks %q:\n%s", want, record)
		}
	}
	if n := run(t, ctx, "counting copy buttons", chromedp.Evaluate[int](`document.querySelectorAll('`+shop+` .record button.copy').length`)); n != 2 {
		t.Errorf("%d copy buttons on the record, want 2 (name and value)", n)
	}
	if state := textOf(t, ctx, shop+" .state"); state != "Pending" {
		t.Errorf("state %q, want Pending", state)
	}

	// Verify against the DNS server: a CNAME to the wrong place is
	// explained, with the fix.
	ts.dns.SetCNAME(t, "shop.example.com", "elsewhere.example.net")
	do(t, ctx, "verifying", chromedp.Click(chromedp.CSS(shop+" button.verify")))
	finding := waitText(t, ctx, shop+" .findings", "must point to "+domaintest.CNAMETarget+" exactly")
	for _, want := range []string{"The CNAME record points elsewhere", "elsewhere.example.net", "How to fix it", "change the value of the CNAME record"} {
		if !strings.Contains(finding, want) {
			t.Errorf("the finding lacks %q:\n%s", want, finding)
		}
	}
	do(t, ctx, "scrolling to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	screenshot(t, ctx, "domains-desktop", desktopWidth, desktopHeight, false)
	screenshot(t, ctx, "domains-desktop-full", desktopWidth, desktopHeight, true)
	screenshot(t, ctx, "domains-phone", phoneWidth, phoneHeight, false)
	screenshot(t, ctx, "domains-phone-full", phoneWidth, phoneHeight, true)
	do(t, ctx, "back to a laptop's size", chromedp.EmulateViewport(desktopWidth, desktopHeight))

	// Fixed at the DNS provider, verified at once.
	// This time from the keyboard: the focus stays on the button through
	// the check and the card's update.
	ts.dns.SetCNAME(t, "shop.example.com", domaintest.CNAMETarget)
	do(t, ctx, "verifying again", chromedp.Focus(chromedp.CSS(shop+" button.verify")), chromedp.KeyEvent(kb.Enter))
	waitText(t, ctx, shop+" .state", "Verified")
	waitText(t, ctx, shop+" .check", "Everything checks out")
	if f := focusedElement(t, ctx); !strings.Contains(f, "verify") {
		t.Errorf("after the check the focus is on %q, want the Re-verify button", f)
	}
	if label := textOf(t, ctx, shop+" button.verify"); label != "Re-verify" {
		t.Errorf("the button of a verified domain says %q, want Re-verify", label)
	}
	// CAA records naming a CA, and this server cannot tell its CA's name in
	// CAA records (it has none): a warning, shown as one, still verified.
	ts.dns.AddCAA(t, "example.com", "issue", "other-ca.example")
	do(t, ctx, "verifying with CAA records", chromedp.Click(chromedp.CSS(shop+" button.verify")))
	warning := waitText(t, ctx, shop+" .finding.warning", "other-ca.example")
	for _, want := range []string{"Warning: CAA records name certificate authorities", "How to fix it"} {
		if !strings.Contains(warning, want) {
			t.Errorf("the warning lacks %q:\n%s", want, warning)
		}
	}
	waitText(t, ctx, shop+" .check", "It checks out, with a warning")
	if state := textOf(t, ctx, shop+" .state"); state != "Verified" {
		t.Errorf("state %q with a warning, want Verified", state)
	}
	ts.dns.Clear(t, domaintest.CAA, "example.com")
	// Half an hour later still without a certificate (this server has no
	// CA), the API gives troubleshooting steps and the page shows them.
	ts.ahead.Store(int64(31 * time.Minute))
	do(t, ctx, "coming back to the domains",
		chromedp.Click(chromedp.ID("tab-project")),
		viewLoaded("project"),
		chromedp.Click(chromedp.ID("tab-domains")),
		viewLoaded("domains"),
	)
	waitText(t, ctx, shop+" .troubleshooting", "Choose Re-verify to start a new certificate attempt")

	// A second domain, the primary domain and a redirect to it.
	www := domainCard("www.example.com")
	do(t, ctx, "adding www.example.com",
		chromedp.SetValue(chromedp.ID("domain-name"), "www.example.com"),
		submit("domain-form"),
		chromedp.WaitVisible(chromedp.CSS(www+" .record")),
		chromedp.SetValue(chromedp.ID("primary"), "shop.example.com"),
		chromedp.Click(chromedp.ID("add-redirect")),
		chromedp.WaitVisible(chromedp.CSS("#redirects .redirect")),
		chromedp.SetValue(chromedp.CSS("#redirects .redirect-from"), "www.example.com"),
		chromedp.SetValue(chromedp.CSS("#redirects .redirect-to"), "shop.example.com"),
		chromedp.SetValue(chromedp.CSS("#redirects .redirect-status"), "308"),
		submit("settings-form"),
	)
	waitText(t, ctx, "#settings-status", "Saved")
	var settings struct {
		Domains struct {
			Primary   string
			Redirects []struct {
				From, To string
				Status   int
			}
		}
	}
	ts.admin(t, http.MethodGet, "/admin/settings", "", &settings)
	if settings.Domains.Primary != "shop.example.com" || len(settings.Domains.Redirects) != 1 ||
		settings.Domains.Redirects[0].From != "www.example.com" || settings.Domains.Redirects[0].To != "shop.example.com" ||
		settings.Domains.Redirects[0].Status != 308 {
		t.Errorf("settings after saving: %+v", settings.Domains)
	}

	// Remove, from the menu beside the domain, after a confirmation.
	do(t, ctx, "removing www.example.com",
		chromedp.Click(chromedp.CSS(www+" .menu-button")),
		chromedp.WaitVisible(chromedp.CSS(www+" [role=menuitem]")),
		chromedp.Click(chromedp.CSS(www+" [role=menuitem]")),
		chromedp.WaitVisible(chromedp.ID("confirm")),
	)
	if title := textOf(t, ctx, "#confirm-title"); title != "Remove www.example.com?" {
		t.Errorf("confirmation title %q", title)
	}
	do(t, ctx, "confirming", chromedp.Click(chromedp.ID("confirm-ok")), chromedp.WaitNotPresent(chromedp.CSS(www)))
	if f := focusedElement(t, ctx); f != "domains-title" {
		t.Errorf("after the removal the focus is on %q, want the Domains heading", f)
	}
	var list []struct{ Name string }
	ts.admin(t, http.MethodGet, "/admin/domains", "", &list)
	if len(list) != 1 || list[0].Name != "shop.example.com" {
		t.Errorf("domains after removing www.example.com: %+v", list)
	}
	// Its redirect went with it, on the server and on the page.
	waitText(t, ctx, "#redirects-empty", "No redirects")

	// The menu and the dialog work from the keyboard, and cancelling keeps
	// the domain.
	focused := func() string { return focusedElement(t, ctx) }
	do(t, ctx, "opening the menu with the keyboard",
		chromedp.Focus(chromedp.CSS(shop+" .menu-button")),
		chromedp.KeyEvent(kb.ArrowDown),
		chromedp.WaitVisible(chromedp.CSS(shop+" [role=menu]")),
	)
	if f := focused(); f != "menuitem" {
		t.Errorf("after ArrowDown on the menu button the focus is on %q, want the menu item", f)
	}
	do(t, ctx, "closing it with Escape", chromedp.KeyEvent(kb.Escape), chromedp.WaitNotVisible(chromedp.CSS(shop+" [role=menu]")))
	if f := focused(); !strings.Contains(f, "menu-button") {
		t.Errorf("after Escape the focus is on %q, want the menu button", f)
	}
	do(t, ctx, "choosing Remove from the keyboard, then cancelling",
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(shop+" [role=menu]")),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.ID("confirm")),
	)
	if f := focused(); !strings.Contains(f, "button-quiet") {
		t.Errorf("the confirmation opens with the focus on %q, want Cancel", f)
	}
	do(t, ctx, "cancelling with Escape", chromedp.KeyEvent(kb.Escape), chromedp.WaitNotVisible(chromedp.ID("confirm")))
	if n := run(t, ctx, "counting domains", chromedp.Evaluate[int](`document.querySelectorAll('li.domain').length`)); n != 1 {
		t.Errorf("%d domains on the page after cancelling, want 1", n)
	}
	do(t, ctx, "removing shop.example.com",
		chromedp.Click(chromedp.CSS(shop+" .menu-button")),
		chromedp.Click(chromedp.CSS(shop+" [role=menuitem]")),
		chromedp.WaitVisible(chromedp.ID("confirm")),
		chromedp.Click(chromedp.ID("confirm-ok")),
		chromedp.WaitNotPresent(chromedp.CSS(shop)),
		chromedp.WaitVisible(chromedp.ID("domains-empty")),
	)
	ts.admin(t, http.MethodGet, "/admin/domains", "", &list)
	if len(list) != 0 {
		t.Errorf("domains after removing both: %+v", list)
	}

	// Sign out forgets the token.
	do(t, ctx, "signing out", chromedp.Click(chromedp.ID("sign-out")), chromedp.WaitVisible(chromedp.ID("token")))
	if got := run(t, ctx, "reading sessionStorage", chromedp.Evaluate[string](`sessionStorage.getItem('petstore.adminToken') || ''`)); got != "" {
		t.Errorf("the token stays in sessionStorage after sign-out")
	}
}

// TestDashboardConfirmsAfterALateClose: a dialog's close event comes in a
// task of its own, after the one that closed it, and a busy browser may
// run clicks first (input goes first: TestDashboard cancels a removal with
// Escape, then removes at once). The confirmation opened in between must
// not take the earlier close for its answer, ignoring its own OK.
func TestDashboardConfirmsAfterALateClose(t *testing.T) {
	t.Parallel()
	ctx, ts := newTabAndServer(t, serverOptions{dns: true})
	ts.planPro(t)
	if status := ts.admin(t, http.MethodPost, "/admin/domains", `{"name":"shop.example.com"}`, nil); status != http.StatusCreated {
		t.Fatalf("adding the domain: %d", status)
	}
	shop := domainCard("shop.example.com")
	signIn(t, ctx, ts.url+"/dashboard/#domains", viewLoaded("domains"), chromedp.WaitVisible(chromedp.CSS(shop+" .menu-button")))
	// One task, so that the cancel's close event is still to come when
	// the second confirmation opens.
	do(t, ctx, "cancelling, then choosing Remove again at once", chromedp.Evaluate[chromedp.Void](`(() => {
		const item = document.querySelector('`+shop+` [role=menuitem]');
		item.click();
		document.getElementById('confirm').close('cancel');
		item.click();
	})()`))
	do(t, ctx, "confirming",
		chromedp.WaitVisible(chromedp.ID("confirm")),
		chromedp.Click(chromedp.ID("confirm-ok")),
		chromedp.WaitNotPresent(chromedp.CSS(shop)),
	)
	var list []struct{ Name string }
	ts.admin(t, http.MethodGet, "/admin/domains", "", &list)
	if len(list) != 0 {
		t.Errorf("domains after confirming the removal: %+v", list)
	}
}

// TestDashboardCertificate follows a certificate from request to issue
// against a real ACME CA: after Verify the card shows the request under
// way, polls, and shows the issued certificate, without a page reload.
func TestDashboardCertificate(t *testing.T) {
	t.Parallel()
	ctx, ts := newTabAndServer(t, serverOptions{acme: true})
	ts.planPro(t)
	if status := ts.admin(t, http.MethodPost, "/admin/domains", `{"name":"api.example.com"}`, nil); status != http.StatusCreated {
		t.Fatalf("adding the domain: %d", status)
	}
	ts.dns.SetCNAME(t, "api.example.com", domaintest.CNAMETarget)

	card := domainCard("api.example.com")
	signIn(t, ctx, ts.url+"/dashboard/#domains",
		viewLoaded("domains"),
		chromedp.WaitVisible(chromedp.CSS(card+" button.verify")),
		// A mark that a reload would wipe out.
		chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`),
		chromedp.Click(chromedp.CSS(card+" button.verify")),
	)
	waitText(t, ctx, card+" .progress", "Requesting a certificate for api.example.com")
	waitText(t, ctx, card+" .certificate", "Issued by")
	waitText(t, ctx, card+" .certificate-details", "Serial")
	waitText(t, ctx, card+" .certificate-details .event", "Obtained")
	if n := run(t, ctx, "looking for the progress", chromedp.Evaluate[int](`document.querySelectorAll('`+card+` .progress').length`)); n != 0 {
		t.Errorf("the progress stays after the certificate was issued")
	}
	if !run(t, ctx, "checking for a reload", chromedp.Evaluate[bool](`window.notReloaded === true`)) {
		t.Errorf("the page reloaded")
	}
	var d struct{ Certificate struct{ State string } }
	ts.admin(t, http.MethodGet, "/admin/domains/api.example.com", "", &d)
	if d.Certificate.State != "issued" {
		t.Errorf("the API says the certificate is %q", d.Certificate.State)
	}
}

// TestDashboardShowsEveryAPIKey: the admin lists come in pages (100 at
// most); the dashboard follows the Link headers and shows every key.
func TestDashboardShowsEveryAPIKey(t *testing.T) {
	t.Parallel()
	ctx, ts := newTabAndServer(t, serverOptions{})
	const keys = 130
	for i := range keys {
		if _, _, err := ts.db.CreateAPIKey(context.Background(), fmt.Sprintf("key %03d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	signIn(t, ctx, ts.url+"/dashboard/",
		chromedp.WaitVisible(chromedp.ID("view-project")),
		chromedp.Click(chromedp.ID("tab-api-keys")),
	)
	last := fmt.Sprintf("key %03d", keys-1)
	waitText(t, ctx, "#keys tbody", last)
	if n := run(t, ctx, "counting the keys", chromedp.Evaluate[int](`document.querySelectorAll('#keys tbody tr').length`)); n != keys {
		t.Errorf("the dashboard shows %d keys, want %d", n, keys)
	}
}

// TestDashboardRetriesALostAnswer: the answer to creating an API key is
// lost on the way (the server created the key, then the connection
// closed). The dashboard sends the request again with the same
// Idempotency-Key and shows the secret of the key the server made: one
// key exists, and the secret shown works.
func TestDashboardRetriesALostAnswer(t *testing.T) {
	t.Parallel()
	ctx, ts := newTabAndServer(t, serverOptions{loseFirstAnswer: "/admin/api-keys"})
	signIn(t, ctx, ts.url+"/dashboard/", chromedp.WaitVisible(chromedp.ID("view-project")))
	createKey(t, ctx, ts, "lost answer")
	keys, _, err := ts.db.APIKeys(context.Background(), store.Page{})
	if err != nil || len(keys) != 1 || keys[0].Name != "lost answer" {
		t.Errorf("keys stored: %+v (%v), want the one", keys, err)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.keysSent) != 2 || ts.keysSent[0] == "" || ts.keysSent[0] != ts.keysSent[1] {
		t.Errorf("Idempotency-Keys sent: %q, want one key twice", ts.keysSent)
	}
}
