package main

import (
	"os"
	"testing"

	"petstore/domains/domaintest"
	"petstore/store/postgres/pgtest"
)

// TestMain stops the private PostgreSQL cluster that tests on --database
// started, if any, and removes the service's builds. The parallel tests
// mostly wait (on child processes, outages and their timeouts, an upgrade,
// a certificate's expiry), so more of them run at once than there are
// cores.
func TestMain(m *testing.M) {
	domaintest.WaitingParallel(8)
	code := m.Run()
	pgtest.Stop()
	removeBuilds()
	os.Exit(code)
}
