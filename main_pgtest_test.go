package main

import (
	"os"
	"testing"

	"petstore/store/postgres/pgtest"
)

// TestMain stops the private PostgreSQL cluster that tests on --database
// started, if any, and removes the service's builds.
func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	removeBuilds()
	os.Exit(code)
}
