package domains_test

import (
	"testing"

	"petstore/domains/domaintest"
	"petstore/store/postgres/pgtest"
)

// The certificate tests run in parallel: they wait for short-lived
// certificates to need renewal or expire, and Pebble and the managers
// cost little CPU meanwhile.
func TestMain(m *testing.M) {
	domaintest.WaitingParallel(8)
	pgtest.Main(m)
}
