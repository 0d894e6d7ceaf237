package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/getkin/kin-openapi/openapi3"
)

// specOperation is what the spec says of one operation, read independently
// of the package's own rendering.
type specOperation struct {
	id, method, path, stability, sunset string
	deprecated, hideTryIt               bool
}

func specOperations(t *testing.T) []specOperation {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(readSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	var ops []specOperation
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			so := specOperation{id: op.OperationID, method: method, path: path, deprecated: op.Deprecated}
			so.stability, _ = op.Extensions["x-stability"].(string)
			so.sunset, _ = op.Extensions["x-deprecated-sunset"].(string)
			so.hideTryIt, _ = op.Extensions["x-hideTryItPanel"].(bool)
			ops = append(ops, so)
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].id < ops[j].id })
	return ops
}

// renderedOperation is an operation as the page shows it.
type renderedOperation struct {
	ID, Method, Path, Badges, Notice string
	TryIt, TryItVisible              bool
}

// TestReferencePage checks the published reference in a real browser
// against the spec: every operation, its badges and deprecation, and where
// the try-it panels are.
func TestReferencePage(t *testing.T) {
	t.Parallel()
	ctx, ts := newTabAndServer(t, serverOptions{})
	do(t, ctx, "opening the reference", chromedp.Navigate(ts.url+"/"), chromedp.WaitVisible(chromedp.CSS("h1")))

	raw := run(t, ctx, "reading the operations", chromedp.Evaluate[string](`JSON.stringify([...document.querySelectorAll('article.operation')].map(a => ({
		ID: a.id,
		Method: a.querySelector('.op-title .method').innerText.trim(),
		Path: a.querySelector('.op-path').innerText.trim(),
		Badges: [...a.querySelectorAll('.badges .badge')].map(b => b.innerText.trim()).join(' | '),
		Notice: (a.querySelector('.notice-deprecated') || {innerText: ''}).innerText,
		TryIt: !!a.querySelector('.tryit'),
		TryItVisible: !!a.querySelector('.tryit') && a.querySelector('.tryit').checkVisibility(),
	})))`))
	var rendered []renderedOperation
	if err := json.Unmarshal([]byte(raw), &rendered); err != nil {
		t.Fatal(err)
	}
	byID := map[string]renderedOperation{}
	for _, r := range rendered {
		if _, dup := byID[r.ID]; dup {
			t.Errorf("operation %s is on the page twice", r.ID)
		}
		byID[r.ID] = r
	}

	ops := specOperations(t)
	if len(rendered) != len(ops) {
		t.Errorf("the page lists %d operations, the spec has %d", len(rendered), len(ops))
	}
	var sawBeta, sawExperimental, sawDeprecated, sawHidden bool
	for _, op := range ops {
		r, ok := byID[op.id]
		if !ok {
			t.Errorf("%s %s (%s) is not on the page", op.method, op.path, op.id)
			continue
		}
		if r.Method != op.method || r.Path != op.path {
			t.Errorf("#%s shows %s %s, want %s %s", op.id, r.Method, r.Path, op.method, op.path)
		}
		if op.stability != "" {
			if !strings.Contains(r.Badges, op.stability) {
				t.Errorf("#%s: badges %q lack %q", op.id, r.Badges, op.stability)
			}
			sawBeta = sawBeta || op.stability == "beta"
			sawExperimental = sawExperimental || op.stability == "experimental"
		} else if strings.Contains(r.Badges, "beta") || strings.Contains(r.Badges, "experimental") {
			t.Errorf("#%s: badges %q, but the spec gives no x-stability", op.id, r.Badges)
		}
		if op.deprecated {
			sawDeprecated = true
			if !strings.Contains(r.Badges, "deprecated") || !strings.Contains(r.Badges, op.sunset) {
				t.Errorf("#%s: badges %q, want deprecated with the sunset %s", op.id, r.Badges, op.sunset)
			}
			if !strings.Contains(r.Notice, "Sunset on "+op.sunset) {
				t.Errorf("#%s: deprecation notice %q does not give the sunset date %s", op.id, r.Notice, op.sunset)
			}
		} else if strings.Contains(r.Badges, "deprecated") {
			t.Errorf("#%s is marked deprecated; the spec does not say so", op.id)
		}
		switch {
		case op.hideTryIt && r.TryIt:
			t.Errorf("#%s has a try-it panel, but the spec sets x-hideTryItPanel", op.id)
		case op.hideTryIt:
			sawHidden = true
		case !r.TryItVisible:
			t.Errorf("#%s has no visible try-it panel", op.id)
		}
	}
	// The spec itself must keep exercising what this test checks.
	if !sawBeta || !sawExperimental || !sawDeprecated || !sawHidden {
		t.Errorf("the spec no longer has beta (%v), experimental (%v), deprecated (%v) and hidden try-it (%v) operations",
			sawBeta, sawExperimental, sawDeprecated, sawHidden)
	}
	if r := byID["listOrders"]; r.TryIt {
		t.Errorf("GET /store/orders has a try-it panel")
	}

	// The admin API is never on the public site.
	if admin := run(t, ctx, "looking for the admin API", chromedp.Evaluate[bool](`document.body.innerText.includes('/admin/')`)); admin {
		t.Errorf("the reference mentions /admin/")
	}
	// Offline: everything the page loaded came from this server.
	foreign := run(t, ctx, "listing loaded resources", chromedp.Evaluate[[]string](`performance.getEntriesByType('resource').map(e => e.name).filter(u => !u.startsWith(location.origin))`))
	if len(foreign) > 0 {
		t.Errorf("the page loaded resources from elsewhere: %v", foreign)
	}
}

// TestReferenceTryIt sends real requests from the try-it panels: a read,
// a write with the API key field, and a write without a key.
func TestReferenceTryIt(t *testing.T) {
	t.Parallel()
	ctx, ts := newTabAndServer(t, serverOptions{})
	key := ts.apiKey(t, "try-it")
	if status, _, b := ts.call(t, http.MethodPost, "/categories", `{"name":"Dogs"}`, map[string]string{"X-API-Key": key}); status != http.StatusCreated {
		t.Fatalf("creating a category: %d %s", status, b)
	}
	for _, name := range []string{"Rex", "Fido"} {
		if status, _, b := ts.call(t, http.MethodPost, "/pets", `{"name":"`+name+`","categoryId":1}`, map[string]string{"X-API-Key": key}); status != http.StatusCreated {
			t.Fatalf("creating a pet: %d %s", status, b)
		}
	}

	do(t, ctx, "opening the reference", chromedp.Navigate(ts.url+"/#listPets"), chromedp.WaitVisible(chromedp.CSS("#listPets .tryit")))

	// GET /pets?limit=1: the real first page, with the Link to the next.
	do(t, ctx, "filling in the GET /pets panel",
		chromedp.Click(chromedp.CSS("#listPets .tryit > summary")),
		chromedp.SendKeys(chromedp.ID("listPets-try-query-limit"), "1"),
		chromedp.Click(chromedp.CSS("#listPets .tryit-form button[type=submit]")),
	)
	status := waitText(t, ctx, "#listPets .tryit-status", "200")
	if !strings.HasPrefix(status, "200 OK") {
		t.Errorf("status line %q", status)
	}
	if line := textOf(t, ctx, "#listPets .tryit-request-line"); line != "GET /pets?limit=1" {
		t.Errorf("request line %q, want GET /pets?limit=1", line)
	}
	headers := strings.ToLower(textOf(t, ctx, "#listPets .tryit-headers"))
	for _, h := range []string{"content-type: application/json", "x-request-id:", `rel="next"`} {
		if !strings.Contains(headers, h) {
			t.Errorf("response headers lack %q:\n%s", h, headers)
		}
	}
	var shown []map[string]any
	if err := json.Unmarshal([]byte(textOf(t, ctx, "#listPets .tryit-response-body")), &shown); err != nil {
		t.Fatalf("the body shown is not the JSON array: %v", err)
	}
	_, _, direct := ts.call(t, http.MethodGet, "/pets?limit=1", "", nil)
	var want []map[string]any
	if err := json.Unmarshal(direct, &want); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(shown) != fmt.Sprint(want) || len(shown) != 1 || shown[0]["name"] != "Rex" {
		t.Errorf("the panel shows %v, the API answers %v", shown, want)
	}

	// POST /pets with the API key typed in the panel: the pet exists after.
	do(t, ctx, "sending POST /pets with a key",
		chromedp.Click(chromedp.CSS("#createPet .tryit > summary")),
		chromedp.SetValue(chromedp.ID("createPet-try-body"), `{"name": "Bello", "categoryId": 1}`),
		paste("createPet-try-key", key),
		chromedp.Click(chromedp.CSS("#createPet .tryit-form button[type=submit]")),
	)
	waitText(t, ctx, "#createPet .tryit-status", "201")
	if body := textOf(t, ctx, "#createPet .tryit-response-body"); !strings.Contains(body, `"name": "Bello"`) {
		t.Errorf("created pet shown as %s", body)
	}
	if line := textOf(t, ctx, "#createPet .tryit-request-line"); strings.Contains(line, key) {
		t.Errorf("the request line shows the API key: %q", line)
	}
	if _, _, b := ts.call(t, http.MethodGet, "/pets?limit=100", "", nil); !strings.Contains(string(b), "Bello") {
		t.Errorf("the pet sent from the panel is not in the store: %s", b)
	}
	// The key typed once is in every panel of the tab.
	if v := run(t, ctx, "reading another key field", chromedp.Value(chromedp.ID("deletePet-try-key"))); v != key {
		t.Errorf("the DELETE /pets/{petId} key field holds %q, want the key typed in POST /pets", v)
	}

	// A write without a key: the real 401 and its Error body are shown.
	do(t, ctx, "sending PUT /store/inventory/{petId} without a key",
		chromedp.Click(chromedp.CSS("#setInventory .tryit > summary")),
		chromedp.SendKeys(chromedp.ID("setInventory-try-path-petid"), "1"),
		paste("setInventory-try-key", ""), // emptied: no key at all
		chromedp.SetValue(chromedp.ID("setInventory-try-body"), `{"quantity": 3}`),
		chromedp.Click(chromedp.CSS("#setInventory .tryit-form button[type=submit]")),
	)
	waitText(t, ctx, "#setInventory .tryit-status", "401")
	if body := textOf(t, ctx, "#setInventory .tryit-response-body"); !strings.Contains(body, `"code": "unauthorized"`) {
		t.Errorf("401 body shown as %s", body)
	}

	// A required path parameter left empty is caught before sending.
	do(t, ctx, "sending GET /categories/{categoryId} without its id",
		chromedp.Click(chromedp.CSS("#getCategory .tryit > summary")),
		chromedp.Click(chromedp.CSS("#getCategory .tryit-form button[type=submit]")),
	)
	waitText(t, ctx, "#getCategory .tryit-problem", "categoryId")
}

// TestReferenceAnchors checks the links the server itself hands out: the
// deprecated operation's Link header points at the page, and the page has
// an element with that id, which the browser scrolls to.
func TestReferenceAnchors(t *testing.T) {
	t.Parallel()
	ctx, ts := newTabAndServer(t, serverOptions{})
	key := ts.apiKey(t, "anchors")
	ts.call(t, http.MethodPost, "/categories", `{"name":"Cats"}`, map[string]string{"X-API-Key": key})
	ts.call(t, http.MethodPost, "/pets", `{"name":"Tom","categoryId":1}`, map[string]string{"X-API-Key": key})
	_, h, _ := ts.call(t, http.MethodGet, "/pets/1", "", nil)
	m := regexp.MustCompile(`<(/#[^>]+)>; rel="sunset"`).FindStringSubmatch(h.Get("Link"))
	if m == nil {
		t.Fatalf("GET /pets/1 has no sunset Link: %q", h.Get("Link"))
	}
	for _, target := range []string{m[1], "/#operation/getPetById"} {
		do(t, ctx, "following "+target, chromedp.Navigate(ts.url+target), chromedp.WaitVisible(chromedp.CSS("h1")))
		// A link within the page loaded already is a hashchange, which the
		// page follows after the navigation: wait for the target it sets.
		waitTarget(t, ctx, target, "getPetById")
		top := run(t, ctx, "reading where it is", chromedp.Evaluate[float64](`document.getElementById('getPetById').getBoundingClientRect().top`))
		if top < -1 || top > 200 {
			t.Errorf("%s: #getPetById is at %v px from the top of the window, not scrolled to", target, top)
		}
	}
}

// TestReferenceScreenshots writes the reference page as a laptop and a
// phone show it, for a person to look at.
func TestReferenceScreenshots(t *testing.T) {
	t.Parallel()
	ctx, ts := newTabAndServer(t, serverOptions{})
	do(t, ctx, "opening the reference", chromedp.Navigate(ts.url+"/"), chromedp.WaitVisible(chromedp.CSS("h1")))
	screenshot(t, ctx, "reference-desktop", desktopWidth, desktopHeight, false)
	screenshot(t, ctx, "reference-phone", phoneWidth, phoneHeight, false)
	// An operation with its parameters and try-it panel, at both sizes.
	do(t, ctx, "opening GET /pets", chromedp.Navigate(ts.url+"/#listPets"), chromedp.WaitVisible(chromedp.CSS("#listPets")))
	screenshot(t, ctx, "reference-operation-phone", phoneWidth, phoneHeight, false)
	// Nothing sticks out sideways on a phone.
	overflow := run(t, ctx, "measuring the width", chromedp.Evaluate[int](`document.documentElement.scrollWidth - document.documentElement.clientWidth`))
	if overflow > 0 {
		t.Errorf("at %d px the page is %d px wider than the screen", phoneWidth, overflow)
	}
	do(t, ctx, "back to a laptop", chromedp.Navigate(ts.url+"/#getPetById"), chromedp.WaitVisible(chromedp.CSS("#getPetById")))
	screenshot(t, ctx, "reference-operation-desktop", desktopWidth, desktopHeight, false)
}

// waitTarget waits until the element with the id want is the page's
// :target, and fails with what the target is otherwise.
func waitTarget(t *testing.T, ctx context.Context, link, want string) {
	t.Helper()
	pollCtx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if _, err := chromedp.Run(pollCtx, chromedp.Poll[bool](fmt.Sprintf(`(document.querySelector(':target') || {}).id === %q`, want),
		chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(':target') || {}).id || ''`))
		t.Errorf("%s: the page targets %q, want %s: %v", link, got, want, err)
	}
}

// TestReferenceTryItOnAFreshStore: on a store with nothing in it, the
// createPet panel, which sits above the operation's documented responses,
// sends its first example as it is and creates a pet (201): the category
// the example names is created first.
func TestReferenceTryItOnAFreshStore(t *testing.T) {
	t.Parallel()
	ctx, ts := newTabAndServer(t, serverOptions{})
	key := ts.apiKey(t, "fresh")
	do(t, ctx, "opening the reference", chromedp.Navigate(ts.url+"/#createPet"), chromedp.WaitVisible(chromedp.CSS("#createPet .tryit")))

	// Every panel comes before its operation's parameters, body and responses.
	late := run(t, ctx, "finding where the panels are", chromedp.Evaluate[[]string](`[...document.querySelectorAll('article.operation')].filter(a => {
		const panel = a.querySelector('.tryit');
		const h4 = a.querySelector('h4');
		return panel && h4 && (panel.compareDocumentPosition(h4) & Node.DOCUMENT_POSITION_PRECEDING);
	}).map(a => a.id)`))
	if len(late) > 0 {
		t.Errorf("try-it panels below the documentation of their operation: %v", late)
	}

	do(t, ctx, "sending POST /pets with the default body",
		chromedp.Click(chromedp.CSS("#createPet .tryit > summary")),
		paste("createPet-try-key", key),
		chromedp.Click(chromedp.CSS("#createPet .tryit-form button[type=submit]")),
	)
	if status := waitText(t, ctx, "#createPet .tryit-status", "201"); !strings.HasPrefix(status, "201") {
		t.Errorf("the default body answered %q", status)
	}
	var pet struct {
		ID         int64  `json:"id"`
		Name       string `json:"name"`
		CategoryID int64  `json:"categoryId"`
	}
	if err := json.Unmarshal([]byte(textOf(t, ctx, "#createPet .tryit-response-body")), &pet); err != nil || pet.ID == 0 {
		t.Fatalf("the panel shows %q (%v)", textOf(t, ctx, "#createPet .tryit-response-body"), err)
	}
	status, _, b := ts.call(t, http.MethodGet, fmt.Sprintf("/pets?id=%d", pet.ID), "", nil)
	if status != http.StatusOK || !strings.Contains(string(b), fmt.Sprintf(`"categoryId":%d`, pet.CategoryID)) {
		t.Errorf("the pet the panel created: %d %s", status, b)
	}
	if status, _, b := ts.call(t, http.MethodGet, fmt.Sprintf("/categories/%d", pet.CategoryID), "", nil); status != http.StatusOK {
		t.Errorf("the category the panel created first: %d %s", status, b)
	}
	if line := textOf(t, ctx, "#createPet .tryit-request-line"); !strings.Contains(line, "created categoryId") || strings.Contains(line, key) {
		t.Errorf("the request line does not say the category was created first: %q", line)
	}
	// Sent again, the category exists: nothing more is created.
	run(t, ctx, "clearing the status shown", chromedp.Evaluate[bool](`document.querySelector('#createPet .tryit-status').textContent = '', true`))
	do(t, ctx, "sending POST /pets again", chromedp.Click(chromedp.CSS("#createPet .tryit-form button[type=submit]")))
	waitText(t, ctx, "#createPet .tryit-status", "201")
	if line := textOf(t, ctx, "#createPet .tryit-request-line"); strings.Contains(line, "created") {
		t.Errorf("the second send created the category again: %q", line)
	}
	if _, _, b := ts.call(t, http.MethodGet, "/categories", "", nil); strings.Count(string(b), `"id"`) != 1 {
		t.Errorf("categories after two sends: %s", b)
	}
}
