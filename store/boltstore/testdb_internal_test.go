package boltstore

import (
	"path/filepath"
	"testing"

	"petstore/store"
)

// openTestDB opens a store on a fresh file and closes it when the test
// ends.
func openTestDB(t *testing.T) *DB {
	t.Helper()
	return openTestFile(t, filepath.Join(t.TempDir(), "petstore.db"))
}

// reopenTestDB closes db and opens its file again, as a restart does.
func reopenTestDB(t *testing.T, db *DB) *DB {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return openTestFile(t, db.Path())
}

func openTestFile(t *testing.T, path string) *DB {
	t.Helper()
	db, err := Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
