package main

import (
	"testing"

	"petstore/store/postgres/pgtest"
)

// TestMain stops the private PostgreSQL cluster that tests on --database
// started, if any.
func TestMain(m *testing.M) {
	pgtest.Main(m)
}
