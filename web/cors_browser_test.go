package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"petstore/domains/domaintest"
)

// crossOriginResult is what the page on the other origin saw of one call:
// the status and the headers a script may read, or the error of a fetch
// the browser blocked.
type crossOriginResult struct {
	Status    int    `json:"status"`
	Blocked   string `json:"blocked"`
	Body      string `json:"body"`
	Link      string `json:"link"`
	Location  string `json:"location"`
	RequestID string `json:"requestId"`
}

// crossOriginCalls runs, in a page served from another origin (a second
// server on another port), what a browser app does: list pets, create one
// with an API key, and try the admin API with the admin token.
func crossOriginCalls(t *testing.T, corsOrigin func(pageOrigin string) []string) (list, create, admin crossOriginResult) {
	t.Helper()
	// The browser reports each call it blocks on the console.
	ctx := newTab(t, "has been blocked by CORS policy")
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>a shop on another origin</title><p>shop</p>`)
	}))
	t.Cleanup(page.Close)
	ts := newServer(t, serverOptions{corsOrigins: corsOrigin(page.URL)})
	key := ts.apiKey(t, "cross-origin")
	for _, c := range []struct{ path, body string }{
		{"/categories", `{"name":"Dogs"}`},
		{"/pets", `{"name":"Rex","categoryId":1}`},
		{"/pets", `{"name":"Fido","categoryId":1}`},
	} {
		if status, _, b := ts.call(t, http.MethodPost, c.path, c.body, map[string]string{"X-API-Key": key}); status != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", c.path, status, b)
		}
	}

	do(t, ctx, "opening the page on the other origin", chromedp.Navigate(page.URL+"/"), chromedp.WaitVisible(chromedp.CSS("p")))
	// The expression's promise settles when the three calls have: the test
	// waits on their outcome, not on time.
	script := fmt.Sprintf(`(async () => {
		const api = %q, key = %q, token = %q;
		const call = async (path, init) => {
			try {
				const r = await fetch(api + path, init);
				return {status: r.status, body: await r.text(), link: r.headers.get("Link") || "",
					location: r.headers.get("Location") || "", requestId: r.headers.get("X-Request-Id") || ""};
			} catch (e) {
				return {blocked: String(e)};
			}
		};
		return JSON.stringify([
			await call("/pets?limit=1"),
			await call("/pets", {method: "POST", headers: {"Content-Type": "application/json", "X-API-Key": key},
				body: JSON.stringify({name: "Bello", categoryId: 1})}),
			await call("/admin/project", {headers: {"Authorization": "Bearer " + token}}),
		]);
	})()`, ts.url, key, domaintest.AdminToken)
	out := run(t, ctx, "calling the API from the other origin", chromedp.Evaluate[string](script, chromedp.EvalAwaitPromise))
	var results []crossOriginResult
	if err := json.Unmarshal([]byte(out), &results); err != nil || len(results) != 3 {
		t.Fatalf("the page's results %q: %v", out, err)
	}
	return results[0], results[1], results[2]
}

// TestCORSFromAnotherOrigin: a script on a configured origin lists pets,
// reading the Link and X-Request-Id headers, and creates a pet with an API
// key (a preflighted request), reading Location; the admin API stays out of
// its reach even with the admin token.
func TestCORSFromAnotherOrigin(t *testing.T) {
	t.Parallel()
	list, create, admin := crossOriginCalls(t, func(origin string) []string { return []string{origin} })
	if list.Blocked != "" || list.Status != http.StatusOK || !strings.Contains(list.Body, `"Rex"`) {
		t.Errorf("listing pets: %+v", list)
	}
	if !strings.Contains(list.Link, `rel="next"`) || list.RequestID == "" {
		t.Errorf("listing pets: the script cannot read Link (%q) or X-Request-Id (%q)", list.Link, list.RequestID)
	}
	if create.Blocked != "" || create.Status != http.StatusCreated || !strings.Contains(create.Body, `"Bello"`) {
		t.Errorf("creating a pet: %+v", create)
	}
	if !strings.HasPrefix(create.Location, "/pets?id=") {
		t.Errorf("creating a pet: the script cannot read Location (%q)", create.Location)
	}
	if admin.Blocked == "" {
		t.Errorf("the admin API answered a script on another origin: %+v", admin)
	}
}

// TestCORSOriginNotConfigured: the same page, its origin not configured
// (another one is), gets nothing: the browser blocks every call.
func TestCORSOriginNotConfigured(t *testing.T) {
	t.Parallel()
	list, create, admin := crossOriginCalls(t, func(string) []string { return []string{"https://app.example.com"} })
	for what, r := range map[string]crossOriginResult{"listing pets": list, "creating a pet": create, "the admin API": admin} {
		if r.Blocked == "" {
			t.Errorf("%s: the browser let a script on an unconfigured origin read %+v", what, r)
		}
	}
}
