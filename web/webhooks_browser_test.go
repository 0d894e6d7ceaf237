package web_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"petstore/domains/domaintest"
	"petstore/events/webhooktest"
)

// TestDashboardWebhooks adds a webhook in the dashboard, copies its secret,
// sends it a test event that a real receiver gets, reads the delivery, and
// disables and deletes the webhook; each step is checked through the admin
// API too.
func TestDashboardWebhooks(t *testing.T) {
	t.Parallel()
	ctx, ts := newTabAndServer(t, serverOptions{webhooks: true})
	rcv := webhooktest.Start(t, webhooktest.Options{})

	signIn(t, ctx, ts.url+"/dashboard/#webhooks", viewLoaded("webhooks"))
	do(t, ctx, "adding a webhook",
		paste("webhook-url", rcv.URL+"/hooks"),
		paste("webhook-events", "*"),
		paste("webhook-description", "browser test"),
		submit("webhook-form"),
		chromedp.WaitVisible(chromedp.ID("new-webhook")),
	)
	secret := run(t, ctx, "reading the secret", chromedp.Value(chromedp.ID("new-webhook-secret")))
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("the secret shown: %q", secret)
	}
	rcv.Trust(secret)
	do(t, ctx, "dismissing the secret", chromedp.Click(chromedp.ID("new-webhook-done")), chromedp.WaitNotVisible(chromedp.ID("new-webhook")))
	code, _, body := ts.call(t, "GET", "/admin/webhooks", "", map[string]string{"Authorization": "Bearer " + domaintest.AdminToken})
	var hooks []struct {
		ID      int64
		URL     string
		Enabled bool
	}
	if err := json.Unmarshal(body, &hooks); code != 200 || err != nil || len(hooks) != 1 || hooks[0].URL != rcv.URL+"/hooks" {
		t.Fatalf("webhooks through the API: %d %s", code, body)
	}
	waitText(t, ctx, "#webhooks tbody", "browser test")

	do(t, ctx, "sending a test event", chromedp.Click(chromedp.CSS(`#webhooks button[aria-label^="Send a test event"]`)),
		chromedp.WaitVisible(chromedp.ID("deliveries-panel")))
	// The engine makes the delivery on its next round, which may come
	// after the panel first loaded: shown again until it is there.
	for i := 0; !strings.Contains(textNow(t, ctx, "#deliveries tbody"), "webhook.test"); i++ {
		if i > 200 {
			t.Fatalf("the test delivery never showed: %s", textNow(t, ctx, "#deliveries tbody"))
		}
		do(t, ctx, "showing the deliveries", chromedp.Click(chromedp.CSS(`#webhooks button[aria-label^="Show the deliveries"]`)))
	}
	// The receiver gets it; the deliveries, shown again, say so.
	for i := 0; ; i++ {
		do(t, ctx, "showing the deliveries", chromedp.Click(chromedp.CSS(`#webhooks button[aria-label^="Show the deliveries"]`)))
		text := textNow(t, ctx, "#deliveries tbody")
		if strings.Contains(text, "succeeded") {
			break
		}
		if i > 200 {
			t.Fatalf("the test delivery never succeeded: %s", text)
		}
	}
	if got := rcv.Deliveries(); len(got) != 1 || got[0].Event.Type != "webhook.test" {
		t.Errorf("the receiver got %d deliveries, want one webhook.test: %+v", len(got), got)
	}

	do(t, ctx, "disabling it", chromedp.Click(chromedp.CSS(`#webhooks button[aria-label^="Disable"]`)))
	waitText(t, ctx, "#webhooks tbody", "disabled")
	_, _, body = ts.call(t, "GET", "/admin/webhooks", "", map[string]string{"Authorization": "Bearer " + domaintest.AdminToken})
	if err := json.Unmarshal(body, &hooks); err != nil || len(hooks) != 1 || hooks[0].Enabled {
		t.Errorf("after disabling: %s", body)
	}
	screenshot(t, ctx, "webhooks-desktop", desktopWidth, desktopHeight, false)
}
