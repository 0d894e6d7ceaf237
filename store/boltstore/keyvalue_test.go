package boltstore_test

import (
	"testing"

	"petstore/domains/domaintest"
	"time"
)

func TestLockRecords(t *testing.T) {
	db := domaintest.OpenStore(t)
	s := db
	if err := s.Lock(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Lock(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	recs := db.CertLockRecords()
	if len(recs) != 2 || !recs["a"].After(time.Now()) || !recs["b"].After(time.Now()) {
		t.Fatalf("lock records while held: %v; want a and b, expiring in the future", recs)
	}
	if err := s.Unlock(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if recs := db.CertLockRecords(); len(recs) != 1 || recs["b"].IsZero() {
		t.Fatalf("lock records after unlocking a: %v; want only b", recs)
	}
	// A lock held when the process stops is dropped at the next start: the
	// file lock proves its holder is gone.
	db = mustReopen(t, db)
	if recs := db.CertLockRecords(); len(recs) != 0 {
		t.Fatalf("lock records after a restart: %v; want none", recs)
	}
}
