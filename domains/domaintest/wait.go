package domaintest

import (
	"testing"
	"time"
)

// WaitFor calls check every interval until it returns nil, and fails the
// test with check's last error when it still does not after within. A
// caller whose check costs the server something (a failed credential
// counts against a limit) picks a longer interval.
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
