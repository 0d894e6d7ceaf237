package domaintest

import (
	"testing"
	"time"
)

// WaitFor checks cond every interval until it holds, and fails the test
// when it still does not after within. A caller whose check costs the
// server something (a failed credential counts against a limit) picks a
// longer interval.
func WaitFor(tb testing.TB, what string, within, every time.Duration, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(every)
	}
}
