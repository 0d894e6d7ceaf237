package web_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"petstore/domains/domaintest"
)

// The browser tests run in a real headless Chromium, shared by the tests of
// the package (starting one takes about a second); each test gets its own
// tab, so sessionStorage and page state never leak between tests.

var browser struct {
	once    sync.Once
	ctx     context.Context // the browser's chromedp context
	cancel  func()
	dataDir string
	err     error // why it could not start
	missing bool  // chromium is not installed
}

func TestMain(m *testing.M) {
	code := m.Run()
	if browser.cancel != nil {
		browser.cancel()
	}
	if browser.dataDir != "" {
		_ = os.RemoveAll(browser.dataDir)
	}
	os.Exit(code)
}

// startBrowser starts the shared Chromium once, the way it runs in
// containers and CI: headless, no sandbox (containers), no GPU, nothing talking
// to Google, and a fresh profile.
func startBrowser() {
	path, err := exec.LookPath("chromium")
	if err != nil {
		browser.missing, browser.err = true, err
		return
	}
	if browser.dataDir, err = os.MkdirTemp("", "petstore-chromium-"); err != nil {
		browser.err = err
		return
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("hide-scrollbars", true),
		// The tests run in parallel tabs, and all but one are in the
		// background: without these, Chromium slows their timers and
		// animation frames, which the pages' polling and the screenshots
		// wait on.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.UserDataDir(browser.dataDir),
		chromedp.WindowSize(desktopWidth, desktopHeight),
	)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	browser.ctx = ctx
	browser.cancel = func() { cancelBrowser(); cancelAlloc() }
	// The first run starts the browser; it must have no deadline, which
	// would end the browser with it.
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(ctx) }()
	select {
	case browser.err = <-done:
	case <-time.After(60 * time.Second):
		browser.err = errors.New("chromium did not start within 60 s")
	}
}

const (
	desktopWidth, desktopHeight = 1280, 800
	phoneWidth, phoneHeight     = 390, 844
)

// newTabAndServer opens a tab, then starts a server with opt: the tab
// first, so that without chromium the test skips before starting servers.
func newTabAndServer(t *testing.T, opt serverOptions) (context.Context, *testServer) {
	t.Helper()
	ctx := newTab(t)
	return ctx, newServer(t, opt)
}

// newTab opens a tab in the shared browser, or skips the test where
// chromium is not installed (and fails it in CI, where it must be). Every
// uncaught exception or console error of the page (a Content-Security-Policy
// violation is one) fails the test: the pages must run clean under the CSP.
// Messages containing one of expected are what the test provokes on purpose.
func newTab(t *testing.T, expected ...string) context.Context {
	t.Helper()
	browser.once.Do(startBrowser)
	if browser.missing {
		msg := "chromium is not installed, so the browser tests cannot run; install it with: apt-get install -y chromium"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if browser.err != nil {
		t.Fatalf("starting chromium: %v", browser.err)
	}
	tab, cancel := chromedp.NewContext(browser.ctx)
	if err := chromedp.Do(tab); err != nil {
		cancel()
		t.Fatalf("opening a tab: %v", err)
	}
	var (
		mu       sync.Mutex
		problems []string
	)
	watchDone := make(chan struct{})
	messages := chromedp.Console(tab)
	go func() {
		defer close(watchDone)
		for m, err := range messages {
			if err != nil {
				return
			}
			// Chromium logs every 4xx/5xx fetch as a network error; the
			// tests provoke some on purpose and check the page's words.
			if (m.Type == chromedp.ConsoleException || (m.Type == chromedp.ConsoleError && m.Source != "network")) &&
				!slices.ContainsFunc(expected, func(e string) bool { return strings.Contains(m.Text, e) }) {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("%s (%s:%d)", m.Text, m.URL, m.Line+1))
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-watchDone
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Errorf("browser console: %s", p)
		}
	})
	return tab
}

// stepTimeout bounds each step of a test, so that a wait for something
// that never appears fails instead of hanging. It is generous: the machines
// that run the tests may be busy, and the race detector slows the server.
const stepTimeout = 30 * time.Second

// do runs browser actions and fails the test with what was being done.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// submit clicks the submit button of the form with the given id.
func submit(form string) chromedp.Action[chromedp.Void] {
	return chromedp.Click(chromedp.CSS("#" + form + " button[type=submit]"))
}

// run runs one action that returns a value.
func run[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// paste puts text in a field as pasting it would: the value at once, then
// the input event pages listen to. Typing a long secret key by key costs a
// round trip to the browser per key.
func paste(id, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const f = document.getElementById(%q);
		f.focus();
		f.value = %q;
		f.dispatchEvent(new Event('input', {bubbles: true}));
	})()`, id, text))
}

// signIn opens the dashboard at url, signs in with the test servers' admin
// token, and then runs then.
func signIn(t *testing.T, ctx context.Context, url string, then ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.ID("token")),
		paste("token", domaintest.AdminToken),
		submit("sign-in-form"),
	}
	do(t, ctx, "signing in", append(steps, then...)...)
}

// textOf returns the rendered text of the first element matching css.
func textOf(t *testing.T, ctx context.Context, css string) string {
	t.Helper()
	return run(t, ctx, "reading the text of "+css, chromedp.Text(chromedp.CSS(css), chromedp.NodeVisible))
}

// textNow reads the text of the element matching css in one evaluation
// ("" while there is none): a table the page renders again, between a
// query for its node and a read of that node's text, would fail textOf.
func textNow(t *testing.T, ctx context.Context, css string) string {
	t.Helper()
	return run(t, ctx, "reading the text of "+css, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q)?.innerText ?? ""`, css)))
}

// waitText waits until the element matching css shows text containing want.
// An element the page keeps hidden (the hidden attribute, on it or on an
// ancestor) shows nothing, although its innerText is its text.
func waitText(t *testing.T, ctx context.Context, css, want string) string {
	t.Helper()
	expr := fmt.Sprintf(`(() => { const el = document.querySelector(%q); return !!el && !el.closest('[hidden]') && el.innerText.includes(%q); })()`, css, want)
	pollCtx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	_, err := chromedp.Run(pollCtx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(() => {
			const el = document.querySelector(%q);
			return !el ? "(no such element)" : (el.closest('[hidden]') ? "(hidden) " : "") + el.innerText;
		})()`, css)))
		t.Fatalf("waiting for %s to show %q: %v; it shows: %q", css, want, err, got)
	}
	return run(t, ctx, "reading "+css, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).innerText`, css)))
}

// screenshotDir is testdata/screenshots at the top of the module; it is
// git-ignored and made by the test.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "testdata", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// screenshot saves the page as a screen of this width shows it, as
// testdata/screenshots/<name>.png: the first screenful, or with fullPage the
// whole page, as tall as it is. A phone is emulated as one: narrow, touch,
// and twice the pixels.
func screenshot(t *testing.T, ctx context.Context, name string, width, height int64, fullPage bool) {
	t.Helper()
	emulate := func(h int64) {
		opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
		if width < 600 {
			opts = []chromedp.EmulateViewportOption{chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait}
		}
		do(t, ctx, "resizing for "+name, chromedp.EmulateViewport(width, h, opts...))
		// Let layout and the media-query listeners settle, and bring the
		// element the URL points at back to the top: a new width moves it.
		do(t, ctx, "waiting for layout", chromedp.Evaluate[chromedp.Void](`new Promise(r => requestAnimationFrame(() => {
			const target = document.querySelector(':target');
			if (target) target.scrollIntoView();
			requestAnimationFrame(r);
		}))`, chromedp.EvalAwaitPromise))
	}
	emulate(height)
	if fullPage {
		h := run(t, ctx, "measuring the page", chromedp.Evaluate[int64](`document.documentElement.scrollHeight`))
		emulate(max(h, height))
		defer emulate(height)
	}
	png := run(t, ctx, "taking the screenshot "+name, chromedp.CaptureScreenshot())
	path := filepath.Join(screenshotDir(t), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", strings.TrimPrefix(path, "../"))
}
