package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"petstore/domains/domaintest"
	"petstore/store"
)

// unstyled lists the classes of the elements under css that no rule of
// the page's style sheets gives a style to (the element's own, or its
// cells'): every field the dashboard shows is styled on purpose.
func unstyled(t *testing.T, ctx context.Context, css string) []string {
	t.Helper()
	return run(t, ctx, "reading the styles of "+css, chromedp.Evaluate[[]string](fmt.Sprintf(`(() => {
		const rules = [];
		const walk = (list) => { for (const r of list) { if (r.selectorText) rules.push(r.selectorText); else if (r.cssRules) walk(r.cssRules); } };
		for (const s of document.styleSheets) walk(s.cssRules);
		const missing = new Set();
		for (const node of document.querySelectorAll(%q)) {
			for (const c of node.classList) {
				// A class styles its element, or, for a row or group,
				// the cells in it.
				const styled = (one) => one.includes('.' + c) && (node.matches(one.trim()) || node.querySelector(one.trim()));
				if (!rules.some((sel) => sel.split(',').some(styled))) missing.add(c);
			}
		}
		return [...missing];
	})()`, css)))
}

// TestDashboardDeliveriesOfAFailingEndpoint: with the deliveries of a
// webhook open and left alone, test events sent through the API show up by
// themselves, each event as one group of its attempts (the retry joins its
// event's group), the endpoint answering 500 shows as failing in red, not
// green, every field is styled, and the Events page lists the events,
// new ones included as they come.
func TestDashboardDeliveriesOfAFailingEndpoint(t *testing.T) {
	t.Parallel()
	ctx, ts := newTabAndServer(t, serverOptions{webhooks: true})
	var hits atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		http.Error(w, "the receiver is down for maintenance", http.StatusInternalServerError)
	}))
	t.Cleanup(receiver.Close)
	admin := map[string]string{"Authorization": "Bearer " + domaintest.AdminToken}
	code, _, body := ts.call(t, "POST", "/admin/webhooks", `{"url":"`+receiver.URL+`/hooks","events":["*"],"description":"a receiver that fails"}`, admin)
	var hook struct{ ID int64 }
	if err := json.Unmarshal(body, &hook); code != 201 || err != nil {
		t.Fatalf("creating the webhook: %d %s", code, body)
	}

	signIn(t, ctx, ts.url+"/dashboard/#webhooks", viewLoaded("webhooks"))
	waitText(t, ctx, "#webhooks tbody", "enabled")
	do(t, ctx, "opening the deliveries", chromedp.Click(chromedp.CSS(`#webhooks button[aria-label^="Show the deliveries"]`)),
		chromedp.WaitVisible(chromedp.ID("deliveries-empty")))

	// Two events, sent behind the page's back: it shows them by itself.
	var sent []string
	for range 2 {
		code, _, body := ts.call(t, "POST", fmt.Sprintf("/admin/webhooks/%d/test", hook.ID), "", admin)
		var e struct{ ID string }
		if err := json.Unmarshal(body, &e); code != 202 && code != 201 || err != nil {
			t.Fatalf("sending a test event: %d %s", code, body)
		}
		sent = append(sent, e.ID)
	}
	for _, id := range sent {
		waitText(t, ctx, fmt.Sprintf(`#deliveries tbody[data-event=%q]`, id), "HTTP 500")
	}
	// The endpoint is failing, and shown so, in the list and the panel.
	text := waitText(t, ctx, "#webhooks .webhook-state", "failing")
	if !strings.Contains(text, "Failing since") {
		t.Errorf("the webhook's state does not say since when it fails: %q", text)
	}
	for _, css := range []string{"#webhooks .webhook-state .pill", "#deliveries-title .pill"} {
		colour := run(t, ctx, "reading the pill's colour", chromedp.Evaluate[string](fmt.Sprintf(`(() => {
			const p = document.querySelector(%q);
			return p.textContent + ' ' + getComputedStyle(p).color;
		})()`, css)))
		if colour != "failing rgb(164, 14, 38)" { // --bad
			t.Errorf("%s: %q, want failing in the colour of failures", css, colour)
		}
	}
	// Each event is one group; its retry (due 5 s after the failure)
	// joins it, without a click.
	groups := run(t, ctx, "counting the groups", chromedp.Evaluate[int](`document.querySelectorAll('#deliveries tbody.event-group').length`))
	if groups != 2 {
		t.Errorf("%d groups of deliveries, want one per event (2)", groups)
	}
	group := fmt.Sprintf(`#deliveries tbody[data-event=%q]`, sent[0])
	waitText(t, ctx, group, "Attempt 2")
	text = waitText(t, ctx, group, "attempts")
	for _, want := range []string{"webhook.test", sent[0], "retrying", "Attempt 1", "failed", "the receiver answered 500", "ms", "next "} {
		if !strings.Contains(text, want) {
			t.Errorf("the event's group does not show %q:\n%s", want, text)
		}
	}
	if n := run(t, ctx, "counting the groups", chromedp.Evaluate[int](`document.querySelectorAll('#deliveries tbody.event-group').length`)); n != 2 {
		t.Errorf("after the retries, %d groups, want 2", n)
	}
	do(t, ctx, "opening an answer", chromedp.Click(chromedp.CSS(group+` .delivery-response summary`)),
		chromedp.WaitVisible(chromedp.CSS(group+` .delivery-response[open] pre`)))
	waitText(t, ctx, group+" .delivery-response pre", "down for maintenance")
	// The retry, 5 s after the first failure, redraws the group: the
	// answer opened stays open.
	waitText(t, ctx, group, "Attempt 3")
	if open := run(t, ctx, "reading the answer's state", chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q).open`, group+" .delivery-response"))); !open {
		t.Error("a redraw closed the answer the operator opened")
	}
	for _, css := range []string{"#deliveries tbody *", "#webhooks tbody *", "#deliveries-title *"} {
		if missing := unstyled(t, ctx, css); len(missing) != 0 {
			t.Errorf("fields under %s without a style: %v", css, missing)
		}
	}
	screenshot(t, ctx, "deliveries-failing-desktop", desktopWidth, desktopHeight, true)

	// The Events page: both events, newest first, and a pet created
	// meanwhile comes by itself.
	do(t, ctx, "opening the events", chromedp.Click(chromedp.ID("tab-events")), viewLoaded("events"))
	text = waitText(t, ctx, "#events tbody", sent[1])
	if i, j := strings.Index(text, sent[1]), strings.Index(text, sent[0]); i < 0 || j < 0 || i > j {
		t.Errorf("the events are not newest first:\n%s", text)
	}
	c := store.Category{Name: "Dogs"}
	if err := ts.db.CreateCategory(context.Background(), &c, nil); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#events tbody", "category.created")
	if missing := unstyled(t, ctx, "#events tbody *"); len(missing) != 0 {
		t.Errorf("event fields without a style: %v", missing)
	}
	screenshot(t, ctx, "events-desktop", desktopWidth, desktopHeight, false)
	if hits.Load() < 3 {
		t.Errorf("the receiver was asked %d times, want the two events and a retry", hits.Load())
	}
}
