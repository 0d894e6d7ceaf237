package boltstore_test

import (
	"os"
	"path/filepath"
	"testing"

	"petstore/domains/domaintest"
	"petstore/store"
)

// A full disk fails writes with insufficient_storage, not internal, makes
// the store degraded, and the store recovers by itself once there is space
// again: Ping's own write finds out.
func TestWrite_DiskFullIsInsufficientStorageAndRecovers(t *testing.T) {
	dir := domaintest.MountSmallDisk(t, 4<<20)
	db := mustOpenPath(t, filepath.Join(dir, "petstore.db"))
	c := mustCategory(t, db, "dogs")
	filler := domaintest.FillDisk(t, dir)

	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		// bbolt may still have pages on disk to reuse; new pets need more.
		p := store.Pet{Name: "Rex", CategoryID: c.ID}
		err = db.CreatePet(ctx, &p, nil)
	}
	checkFailedWrite(t, db, err, store.EINSUFFICIENTSTORAGE, "on a full disk")

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping after space was freed: %v", err)
	}
	if err := db.Degraded(); err != nil {
		t.Fatalf("still degraded after a successful write: %v", err)
	}
	mustPet(t, db, "after the disk was freed", c.ID, "")
}
