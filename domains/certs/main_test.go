package certs_test

import (
	"testing"

	"petstore/store/postgres/pgtest"
)

func TestMain(m *testing.M) {
	pgtest.Main(m)
}
