package web_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// shown reports whether the element with this id is rendered (displayed,
// with a box), as a person would see it.
func shown(t *testing.T, ctx context.Context, id string) bool {
	t.Helper()
	return run(t, ctx, "looking for #"+id, chromedp.Evaluate[bool](`(() => {
		const el = document.getElementById(`+"`"+id+"`"+`);
		return !!el && el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
	})()`))
}

// wantBesideOnly waits for the error of the field id to say want, and
// fails unless it is beside the field and not (also) in the page's banner.
func wantBesideOnly(t *testing.T, ctx context.Context, id, want, what string) {
	t.Helper()
	waitText(t, ctx, "#"+id+"-error", want)
	if text, beside := fieldErrorOf(t, ctx, id); !beside {
		t.Errorf("%s %q is not beside the field", what, text)
	}
	if shown(t, ctx, "app-error") {
		t.Errorf("%s is (also) in the banner", what)
	}
}

// fieldErrorOf reads the error shown beside a field: its text, whether it
// sits in the field's own .field box, whether the field points at it with
// aria-describedby and is marked aria-invalid.
func fieldErrorOf(t *testing.T, ctx context.Context, field string) (text string, beside bool) {
	t.Helper()
	got := run(t, ctx, "reading the error of #"+field, chromedp.Evaluate[[]string](`(() => {
		const input = document.getElementById(`+"`"+field+"`"+`);
		const box = document.getElementById(`+"`"+field+"-error`"+`);
		if (!box || box.closest('[hidden]') || box.getClientRects().length === 0) return ['', 'false'];
		const together = box.closest('.field') === input.closest('.field')
			&& (input.getAttribute('aria-describedby') || '').split(' ').includes(box.id)
			&& input.getAttribute('aria-invalid') === 'true';
		return [box.innerText, String(together)];
	})()`))
	return got[0], got[1] == "true"
}

// TestDashboardFirstRun looks at the dashboard as a newcomer meets it on a
// fresh service: no Sign out before signing in; a Free plan that says why
// domains need Pro and how the operator changes it; form errors beside
// their field rather than in a banner; and the favicon.
func TestDashboardFirstRun(t *testing.T) {
	t.Parallel()
	ctx, ts := newTabAndServer(t, serverOptions{dns: true})

	do(t, ctx, "opening the dashboard", chromedp.Navigate(ts.url+"/dashboard/"), chromedp.WaitVisible(chromedp.ID("token")))
	if shown(t, ctx, "sign-out") || shown(t, ctx, "session") {
		t.Error("Sign out is shown on the sign-in screen")
	}
	screenshot(t, ctx, "firstrun-sign-in", desktopWidth, desktopHeight, false)

	// The favicon: the page names it, and it is an icon a browser can read.
	if href := run(t, ctx, "reading the icon link", chromedp.Evaluate[string](`document.querySelector('link[rel=icon]').href`)); href != ts.url+"/favicon.ico" {
		t.Errorf("the page's icon is %q", href)
	}
	status, header, body := ts.call(t, http.MethodGet, "/favicon.ico", "", nil)
	if status != http.StatusOK || header.Get("Content-Type") != "image/svg+xml" || header.Get("Cache-Control") != "public, max-age=86400" || !bytes.HasPrefix(body, []byte("<svg ")) {
		t.Fatalf("/favicon.ico: %d %s %q, %.40q", status, header.Get("Content-Type"), header.Get("Cache-Control"), body)
	}
	// Chromium draws it at the size the page asks for: the paw's pad is
	// inked, the corner between the toes is not. The drawing is saved
	// beside the screenshots.
	icon := run(t, ctx, "drawing the icon", chromedp.Evaluate[[]string](`new Promise((ok, fail) => {
		const img = new Image();
		img.onerror = () => fail(new Error("the browser cannot read /favicon.ico"));
		img.onload = () => {
			const c = document.createElement("canvas");
			c.width = c.height = 32;
			const g = c.getContext("2d");
			g.drawImage(img, 0, 0, 32, 32);
			const alpha = (x, y) => String(g.getImageData(x, y, 1, 1).data[3]);
			ok([String(img.naturalWidth), alpha(16, 21), alpha(0, 31), c.toDataURL("image/png")]);
		};
		img.src = "/favicon.ico";
	})`, chromedp.EvalAwaitPromise))
	if icon[0] != "32" || icon[1] == "0" || icon[2] != "0" {
		t.Errorf("the icon as Chromium draws it: %s wide, alpha %s on the pad and %s in a corner", icon[0], icon[1], icon[2])
	}
	drawn, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(icon[3], "data:image/png;base64,"))
	if err != nil {
		t.Fatal(err)
	}
	if err := saveScreenshot(t, "firstrun-favicon", drawn); err != nil {
		t.Error(err)
	}

	signIn(t, ctx, ts.url+"/dashboard/", chromedp.WaitVisible(chromedp.ID("view-project")))
	if !shown(t, ctx, "sign-out") {
		t.Error("Sign out is not shown once signed in")
	}

	// The Free plan: why domains need Pro, and how to change it; no form
	// that the server would refuse, and no "Add one above" without one.
	do(t, ctx, "opening the domains", chromedp.Click(chromedp.ID("tab-domains")), viewLoaded("domains"))
	note := waitText(t, ctx, "#plan-note", "Custom domains need the Pro plan")
	for _, want := range []string{"this project is on Free", "Plans are how a platform", "you are the operator", "Project → Plan", "PATCH /admin/project"} {
		if !strings.Contains(note, want) {
			t.Errorf("the plan note does not say %q:\n%s", want, note)
		}
	}
	if shown(t, ctx, "domain-form") {
		t.Error("the add-domain form is offered on the Free plan")
	}
	if empty := waitText(t, ctx, "#domains-empty", "No domains yet"); strings.Contains(empty, "above") {
		t.Errorf("the empty list says %q with no form above", empty)
	}
	screenshot(t, ctx, "firstrun-free-plan", desktopWidth, desktopHeight, false)

	// The note's link leads to the plan; a name left empty is refused
	// beside the name field, not in a banner at the top.
	do(t, ctx, "following the note's link", chromedp.Click(chromedp.CSS(`#plan-note a[href="#project"]`)), viewLoaded("project"),
		paste("project-name", ""), submit("project-form"))
	wantBesideOnly(t, ctx, "project-name", "Give the project a name", "the empty name's error")
	screenshot(t, ctx, "firstrun-field-error", desktopWidth, desktopHeight, false)

	// Pro, through the form: the error leaves, the domain form comes.
	do(t, ctx, "choosing Pro", paste("project-name", "Petstore"),
		chromedp.SetValue(chromedp.ID("project-plan"), "pro"), submit("project-form"))
	waitText(t, ctx, "#project-status", "Saved")
	if text, _ := fieldErrorOf(t, ctx, "project-name"); text != "" {
		t.Errorf("the name's error %q stays after a successful save", text)
	}
	do(t, ctx, "opening the domains on Pro", chromedp.Click(chromedp.ID("tab-domains")), viewLoaded("domains"), chromedp.WaitVisible(chromedp.ID("domain-name")))
	if shown(t, ctx, "plan-note") {
		t.Error("the plan note stays on Pro")
	}
	waitText(t, ctx, "#domains-empty", "No domains yet. Add one above.")

	// The server's refusal of a name is shown beside the field too.
	do(t, ctx, "adding a name that is not a domain", chromedp.SetValue(chromedp.ID("domain-name"), "not a domain"), submit("domain-form"))
	wantBesideOnly(t, ctx, "domain-name", "not a", "the refused domain's error")
	screenshot(t, ctx, "firstrun-domain-error", desktopWidth, desktopHeight, false)
	do(t, ctx, "adding a domain", chromedp.SetValue(chromedp.ID("domain-name"), "shop.example.com"), submit("domain-form"),
		chromedp.WaitVisible(chromedp.CSS(domainCard("shop.example.com"))))
	if text, _ := fieldErrorOf(t, ctx, "domain-name"); text != "" {
		t.Errorf("the domain's error %q stays after a domain was added", text)
	}
}

// TestDashboardDevelopmentDomainsText: in development (no --domain, no
// --cname-target) the Domains page names the flags and does not point at a
// form above that is not there.
func TestDashboardDevelopmentDomainsText(t *testing.T) {
	t.Parallel()
	ctx := openDevelopmentDomains(t)
	waitText(t, ctx, "#target-note", "--cname-target")
	if empty := waitText(t, ctx, "#domains-empty", "No domains yet"); strings.Contains(empty, "above") {
		t.Errorf("development says %q, with no form above", empty)
	}
	screenshot(t, ctx, "firstrun-development-domains", desktopWidth, desktopHeight, false)
}

// TestReferencePathsWrapAtSlashes: in the reference's sidebar and headings,
// a path that does not fit wraps only before a "/", never inside a segment
// such as {categoryId}, at desktop and phone widths and in a sidebar
// narrowed to force wrapping.
func TestReferencePathsWrapAtSlashes(t *testing.T) {
	t.Parallel()
	ctx, ts := newTabAndServer(t, serverOptions{})
	do(t, ctx, "opening the reference", chromedp.Navigate(ts.url+"/"), chromedp.WaitVisible(chromedp.CSS(".toc-path")))
	// breaks lists, for every path, the text of each line after the first
	// as it is laid out: each must start with "/".
	const breaks = `(() => {
		const bad = [];
		let wrapped = 0;
		for (const el of document.querySelectorAll('.toc-path, .op-path')) {
			if (el.getClientRects().length === 0) continue;
			const text = el.textContent;
			const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
			let top = null, at = 0;
			for (let node = walker.nextNode(); node; node = walker.nextNode()) {
				for (let i = 0; i < node.length; i++, at++) {
					const r = document.createRange();
					r.setStart(node, i); r.setEnd(node, i + 1);
					const rect = r.getBoundingClientRect();
					if (rect.width === 0) continue;
					if (top !== null && rect.top > top + 2) {
						wrapped++;
						if (text[at] !== '/') bad.push(text.slice(0, at) + ' | ' + text.slice(at));
					}
					top = rect.top;
				}
			}
		}
		return {bad, wrapped};
	})()`
	type result struct {
		Bad     []string `json:"bad"`
		Wrapped int      `json:"wrapped"`
	}
	check := func(what string) int {
		r := run(t, ctx, "measuring the paths' lines "+what, chromedp.Evaluate[result](breaks))
		for _, b := range r.Bad {
			t.Errorf("%s: a path breaks inside a segment: %q", what, b)
		}
		return r.Wrapped
	}
	screenshot(t, ctx, "firstrun-reference-desktop", desktopWidth, desktopHeight, false)
	check("at desktop width")
	screenshot(t, ctx, "firstrun-reference-phone", phoneWidth, phoneHeight, false)
	check("at phone width")
	// A sidebar as narrow as a long path: most paths must wrap, each at a
	// slash.
	do(t, ctx, "narrowing the sidebar", chromedp.EmulateViewport(desktopWidth, desktopHeight),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('.layout').style.gridTemplateColumns = '11rem minmax(0, 1fr)'`))
	screenshot(t, ctx, "firstrun-reference-narrow-sidebar", desktopWidth, desktopHeight, false)
	if wrapped := check("in a narrow sidebar"); wrapped == 0 {
		t.Error("no path wrapped in a narrow sidebar; the test measures nothing")
	}
}

// saveScreenshot writes a PNG the test made itself beside the screenshots.
func saveScreenshot(t *testing.T, name string, pngData []byte) error {
	t.Helper()
	return os.WriteFile(filepath.Join(screenshotDir(t), name+".png"), pngData, 0o644)
}
