package domaintest

import (
	"cmp"
	"context"
	"path/filepath"
	"testing"

	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/postgres"
)

// OpenStore opens a store on a fresh temporary file, closed when the test
// ends.
func OpenStore(tb testing.TB) *boltstore.DB {
	tb.Helper()
	return OpenStoreFile(tb, filepath.Join(tb.TempDir(), "petstore.db"), store.Options{})
}

// OpenStoreFile opens a store on path with opts, closed when the test ends.
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

// WriteStoreFile makes a closed data file at path holding what fill (nil:
// nothing) writes.
func WriteStoreFile(tb testing.TB, path string, fill func(db *boltstore.DB) error) {
	tb.Helper()
	db, err := boltstore.Open(path, store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	if fill != nil {
		err = fill(db)
	}
	err = cmp.Or(err, db.Close())
	if err != nil {
		tb.Fatal(err)
	}
}

// OpenPostgres opens a store on the PostgreSQL database at url, closed when
// the test ends: one more handle on the data, as another instance has.
func OpenPostgres(tb testing.TB, url string) *postgres.DB {
	tb.Helper()
	db, err := postgres.Open(context.Background(), url, store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}
