package domains_test

import (
	"os"
	"testing"

	"petstore/store/postgres/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}
