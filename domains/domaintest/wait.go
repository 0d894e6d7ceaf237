package domaintest

import (
	"strings"
	"testing"
	"time"

	"petstore/store"
)

// WaitFor calls check every interval until nil, failing the test with its
// last error after within. Costly checks want a longer interval.
func WaitFor(tb testing.TB, within, every time.Duration, check func() error) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("not within %v: %v", within, err)
		}
		time.Sleep(every)
	}
}

// Contains fails the test for each of subs that s, named what, lacks.
func Contains(tb testing.TB, what, s string, subs ...string) {
	tb.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			tb.Errorf("%s %q does not mention %q", what, s, sub)
		}
	}
}

// OneFinding returns r's one finding, failing the test unless r is
// unverified with exactly one finding of code, with a message and a fix.
func OneFinding(tb testing.TB, r store.DomainCheck, code string) store.Finding {
	tb.Helper()
	if r.Verified || len(r.Findings) != 1 || r.Findings[0].Code != code {
		tb.Fatalf("got verified=%v findings %+v; want exactly one %s", r.Verified, r.Findings, code)
	}
	f := r.Findings[0]
	if f.Message == "" || f.Fix == "" {
		tb.Errorf("finding without message or fix: %+v", f)
	}
	return f
}
