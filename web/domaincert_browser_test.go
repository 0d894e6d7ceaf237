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

// hostileError is an error a CA or a resolver could send back, quoted in a
// domain's certificate record: the page must show it as text.
const hostileError = `CAA record for example.com forbids issuance: <img src=x onerror="document.title='pwned'">`

// certCard adds a domain, gives it the certificate record change makes,
// and opens the dashboard on its card, whose selector it returns.
func certCard(t *testing.T, change func(*store.Certificate)) (context.Context, string) {
	t.Helper()
	ctx, ts := newTabAndServer(t, serverOptions{dns: true})
	const name = "shop.example.com"
	ts.planPro(t)
	if status := ts.admin(t, http.MethodPost, "/admin/domains", `{"name":"`+name+`"}`, nil); status != http.StatusCreated {
		t.Fatalf("adding the domain: %d", status)
	}
	if _, err := ts.db.UpdateDomain(context.Background(), name, func(d *store.Domain) error {
		d.State = store.DomainVerified
		change(&d.Certificate)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	card := domainCard(name)
	signIn(t, ctx, ts.url+"/dashboard/#domains", viewLoaded("domains"), chromedp.WaitVisible(chromedp.CSS(card+" .certificate")))
	return ctx, card
}

// TestDashboardShowsAFailedRenewal: a certificate still in use whose
// renewal failed (say a CAA record appeared after issuance) is issued with
// an error; the card says the renewal failed and why, as text, instead of
// only that it renews by itself.
func TestDashboardShowsAFailedRenewal(t *testing.T) {
	t.Parallel()
	notAfter := time.Now().Add(20 * 24 * time.Hour).UTC()
	at := time.Now().Add(-time.Minute).UTC()
	ctx, card := certCard(t, func(c *store.Certificate) {
		*c = store.Certificate{State: store.CertIssued, Issuer: "Test CA", Serial: "0a1b", NotAfter: &notAfter,
			Error: hostileError, LastAttempt: &store.CertAttempt{At: at, Renewal: true, Error: hostileError}}
	})
	got := waitText(t, ctx, card+" .certificate .cert-error", "The last renewal attempt failed")
	if !strings.Contains(got, hostileError) {
		t.Errorf("the renewal's error is not shown as sent:\n%s", got)
	}
	if n := run(t, ctx, "looking for markup from the error", chromedp.Evaluate[int](`document.querySelectorAll('`+card+` img').length`)); n != 0 {
		t.Errorf("the error's markup became %d elements", n)
	}
}

// TestDashboardLongCertificateErrorWraps: a CA's error can hold a long
// URL with no space to break at; in the state, the next attempt's reason
// and the events it wraps inside the card, on a phone too, instead of
// widening the page.
func TestDashboardLongCertificateErrorWraps(t *testing.T) {
	t.Parallel()
	long := "urn:ietf:params:acme:error:unauthorized: https://acme.example/acme/authz/" + strings.Repeat("AbCdEf0123", 30)
	now := time.Now().UTC()
	next := now.Add(time.Hour)
	ctx, card := certCard(t, func(c *store.Certificate) {
		*c = store.Certificate{State: store.CertFailed, Error: long, NextAttemptAt: &next, NextAttemptReason: long,
			LastAttempt: &store.CertAttempt{At: now, Error: long},
			Events:      []store.CertEvent{{Kind: store.CertEventFailed, At: now, Detail: long}}}
	})
	waitText(t, ctx, card+" .certificate", "AbCdEf0123AbCdEf0123")
	for _, width := range []int64{1280, 375} {
		do(t, ctx, "resizing", chromedp.EmulateViewport(width, 800))
		wide := run(t, ctx, "measuring the page", chromedp.Evaluate[bool](`document.documentElement.scrollWidth > document.documentElement.clientWidth`))
		if wide {
			t.Errorf("at %d px the long error makes the page scroll sideways", width)
		}
	}
}

// TestDashboardNewAdminTokenMidRefresh: the admin token changes (an
// operator restarts with another) while the domains page polls a pending
// certificate. The poll's 401 signs the operator out with a word of why;
// signed in with the new token, the card shows no stale error of the old
// session and its polling goes on.
func TestDashboardNewAdminTokenMidRefresh(t *testing.T) {
	t.Parallel()
	ctx, ts := newTabAndServer(t, serverOptions{dns: true})
	const name = "shop.example.com"
	ts.planPro(t)
	if status := ts.admin(t, http.MethodPost, "/admin/domains", `{"name":"`+name+`"}`, nil); status != http.StatusCreated {
		t.Fatalf("adding the domain: %d", status)
	}
	setCert := func(c store.Certificate) {
		t.Helper()
		if _, err := ts.db.UpdateDomain(context.Background(), name, func(d *store.Domain) error {
			d.State, d.Certificate = store.DomainVerified, c
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	setCert(store.Certificate{State: store.CertPending})
	card := domainCard(name)
	signIn(t, ctx, ts.url+"/dashboard/#domains", viewLoaded("domains"), chromedp.WaitVisible(chromedp.CSS(card+" .certificate")))

	const newToken = "pat_" + "0123456789abcdef0123456789abcdef"
	if _, err := ts.db.EnsureAdminToken(context.Background(), newToken); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#sign-in-error", "Your session ended")
	do(t, ctx, "signing in with the new token", paste("token", newToken), submit("sign-in-form"),
		viewLoaded("domains"), chromedp.WaitVisible(chromedp.CSS(card+" .certificate")))
	if n := run(t, ctx, "looking for errors on the card", chromedp.Evaluate[int](`document.querySelectorAll('`+card+` .alert-error').length`)); n != 0 {
		t.Errorf("after signing in again the card shows %d errors of the old session: %s", n, textNow(t, ctx, card+" .alert-error"))
	}
	// The poll goes on: the certificate issued is shown without a reload.
	notAfter := time.Now().Add(60 * 24 * time.Hour).UTC()
	setCert(store.Certificate{State: store.CertIssued, Issuer: "Test CA", NotAfter: &notAfter})
	waitText(t, ctx, card+" .certificate", "Issued by Test CA")
}
