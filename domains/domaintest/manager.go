package domaintest

import (
	"testing"

	"petstore/domains"
)

// NewManager makes a domains manager from cfg and closes it when the test
// ends.
func NewManager(tb testing.TB, cfg domains.Config) *domains.Manager {
	tb.Helper()
	m, err := domains.NewManager(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(m.Close)
	return m
}
