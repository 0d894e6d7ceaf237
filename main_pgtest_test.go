package main

import (
	"os"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store/postgres/pgtest"
)

// TestMain stops the private PostgreSQL cluster that tests on --database
// started, if any, and removes the service's builds. The parallel tests
// are bounded by slots (parallel), not by -parallel's default.
func TestMain(m *testing.M) {
	domaintest.WaitingParallel(64)
	code := m.Run()
	pgtest.Stop()
	removeBuilds()
	os.Exit(code)
}

// slots bounds the parallel tests that run at once. They mostly wait (on
// child processes, outages and their timeouts, an upgrade), so more of
// them run at once than there are cores.
var slots = make(chan struct{}, 8)

// parallel is t.Parallel within slots. The test's time, as go test
// reports it, includes its wait for a slot, which it logs.
func parallel(t *testing.T) {
	t.Helper()
	t.Parallel()
	began := time.Now()
	slots <- struct{}{}
	t.Cleanup(func() { <-slots })
	if waited := time.Since(began); waited > time.Second {
		t.Logf("waited %v for a slot among the parallel tests", waited.Round(time.Second))
	}
}

// longParallel is t.Parallel outside slots, for the longest tests, which
// wait most of their time (for a certificate's lifetime; for the binary's
// build and a killed process's leases): they start as
// soon as the serial tests end, not after a share of the other parallel
// tests (which run in no set order), and do not end the package long
// after the rest.
func longParallel(t *testing.T) {
	t.Helper()
	t.Parallel()
}
