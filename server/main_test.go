package server

import (
	"os"
	"testing"

	"petstore/domains/domaintest"
)

// TestMain lets the tests that wait for a timeout (the PROXY header's,
// net/http's own at shutdown) wait at the same time, more of them than
// there are cores.
func TestMain(m *testing.M) {
	domaintest.WaitingParallel(4)
	os.Exit(m.Run())
}
