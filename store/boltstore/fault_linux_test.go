package boltstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"petstore/store"
)

// mountSmallDisk mounts a tmpfs of size bytes on a new folder and unmounts
// it when the test ends: a real file system that runs out of space. It
// needs root (CI runs as root); elsewhere the test is skipped.
func mountSmallDisk(tb testing.TB, size int) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "small-disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		tb.Skipf("cannot mount a small tmpfs to run out of disk space (needs root): %v", err)
	}
	tb.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			tb.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

// fillDisk writes a file until the disk is full and returns its path.
func fillDisk(tb testing.TB, dir string) string {
	tb.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for i := 0; ; i++ {
		if i > 1<<14 {
			tb.Fatal("the disk never filled up")
		}
		_, err := f.Write(chunk)
		if errors.Is(err, syscall.ENOSPC) {
			break
		} else if err != nil {
			tb.Fatal(err)
		}
	}
	// Then the last bytes: a smaller write may still fit.
	for n := len(chunk) / 2; n > 0; n /= 2 {
		_, _ = f.Write(chunk[:n])
	}
	return path
}

// A full disk fails writes with insufficient_storage, not internal, makes
// the store degraded, and the store recovers by itself once there is space
// again: Ping's own write finds out.
func TestWrite_DiskFullIsInsufficientStorageAndRecovers(t *testing.T) {
	dir := mountSmallDisk(t, 4<<20)
	db := mustOpenPath(t, filepath.Join(dir, "petstore.db"))
	c := mustCategory(t, db, "dogs")
	filler := fillDisk(t, dir)

	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		// bbolt may still have pages on disk to reuse; new pets need more.
		p := store.Pet{Name: "Rex", CategoryID: c.ID}
		err = db.CreatePet(ctx, &p)
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
