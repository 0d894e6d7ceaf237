package boltstore_test

import (
	"os"
	"path/filepath"
	"testing"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/boltstore"
)

// A full disk fails writes with insufficient_storage, not internal, makes
// the store degraded, and the store recovers by itself once there is space
// again: Ping's own write finds out.
func TestWrite_DiskFullIsInsufficientStorageAndRecovers(t *testing.T) {
	db, c, filler := fullDisk(t)

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

// On a full disk, a write that fits in the file's free pages succeeds
// while those that need new ones fail: readiness stays off until the disk
// has room again, rather than turning with the size of the last write.
func TestPing_DiskFullStaysUnreadyWhileSmallWritesSucceed(t *testing.T) {
	db, c, filler := fullDisk(t)
	c.Name = "hounds"
	if err := db.ReplaceCategory(ctx, &c, store.Condition{}); err != nil {
		t.Fatalf("a small write on the full disk: %v", err)
	}
	if err := db.Ping(ctx); store.ErrorCode(err) != store.EINSUFFICIENTSTORAGE {
		t.Errorf("Ping after a small write succeeded on the full disk: %v; want insufficient_storage", err)
	}
	p := store.Pet{Name: "Rex", CategoryID: c.ID}
	if err := db.CreatePet(ctx, &p, nil); store.ErrorCode(err) != store.EINSUFFICIENTSTORAGE {
		t.Fatalf("a new pet after it: %v; want insufficient_storage still", err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping after space was freed: %v", err)
	}
	mustPet(t, db, "after the disk was freed", c.ID, "")
}

// fullDisk opens a store with a category on a small disk, fills the disk,
// and creates pets until a create fails with insufficient_storage; filler
// is the file whose removal gives the room back.
func fullDisk(t *testing.T) (db *boltstore.DB, c store.Category, filler string) {
	t.Helper()
	dir := domaintest.MountSmallDisk(t, 4<<20)
	db = mustOpenPath(t, filepath.Join(dir, "petstore.db"))
	c = mustCategory(t, db, "dogs")
	filler = domaintest.FillDisk(t, dir)
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		// bbolt may still have pages on disk to reuse; new pets need more.
		p := store.Pet{Name: "Rex", CategoryID: c.ID}
		err = db.CreatePet(ctx, &p, nil)
	}
	checkFailedWrite(t, db, err, store.EINSUFFICIENTSTORAGE, "on a full disk")
	return db, c, filler
}
