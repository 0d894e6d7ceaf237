package boltstore_test

import (
	"path/filepath"
	"testing"

	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/storetest"
)

// The bbolt file behaves as every store must.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		db, err := boltstore.Open(filepath.Join(t.TempDir(), "petstore.db"), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}
