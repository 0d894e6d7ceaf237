package boltstore_test

import (
	"testing"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/storetest"
)

// The bbolt file behaves as every store must.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return domaintest.OpenStore(t) })
}
