package postgres_test

import (
	"testing"

	"petstore/store"
	"petstore/store/storetest"
)

// PostgreSQL behaves as every store must, and as the bbolt file does.
func TestStore(t *testing.T) {
	t.Parallel() // beside TestIdleInstancesReadNoKeptEvent, the longest
	storetest.Run(t, func(t *testing.T) store.Store { return open(t) })
}
