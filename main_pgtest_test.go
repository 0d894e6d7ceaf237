package main

import (
	"os"
	"testing"

	"petstore/store/postgres/pgtest"
)

// TestMain stops the private PostgreSQL cluster that tests on --database
// started, if any.
func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}
