package domaintest

import (
	"context"
	"path/filepath"
	"testing"

	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/postgres"
)

// OpenStore opens a store on a fresh file in tb's temporary folder and
// closes it when the test ends.
func OpenStore(tb testing.TB) *boltstore.DB {
	tb.Helper()
	return OpenStoreFile(tb, filepath.Join(tb.TempDir(), "petstore.db"), store.Options{})
}

// OpenStoreFile opens a store on path with opts and closes it when the test
// ends.
func OpenStoreFile(tb testing.TB, path string, opts store.Options) *boltstore.DB {
	tb.Helper()
	db, err := boltstore.Open(path, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Error(err)
		}
	})
	return db
}

// WriteStoreFile makes a data file at path holding what fill (nil for
// nothing) writes, and closes it: a file for a service or a migration to
// open.
func WriteStoreFile(tb testing.TB, path string, fill func(db *boltstore.DB) error) {
	tb.Helper()
	db, err := boltstore.Open(path, store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	if fill != nil {
		err = fill(db)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// OpenPostgres opens a store on the PostgreSQL database at url and closes
// it when the test ends. Each call is one more handle on the same data, as
// another instance would have.
func OpenPostgres(tb testing.TB, url string) *postgres.DB {
	tb.Helper()
	db, err := postgres.Open(context.Background(), url, store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}
