package handlers_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"petstore/domains/domaintest"
	"petstore/handlers"
	"petstore/store"
	"petstore/store/boltstore"
)

// onSmallDisk is a server option: the store on a 4 MiB tmpfs mounted for the
// test, a real file system that runs out of space. It needs root (CI runs as
// root); elsewhere the test is skipped.
func onSmallDisk(tb testing.TB, dir *string) serverOption {
	tb.Helper()
	*dir = filepath.Join(tb.TempDir(), "small-disk")
	if err := os.Mkdir(*dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", *dir, "tmpfs", 0, "size="+strconv.Itoa(4<<20)); err != nil {
		tb.Skipf("cannot mount a small tmpfs to run out of disk space (needs root): %v", err)
	}
	tb.Cleanup(func() {
		if err := syscall.Unmount(*dir, 0); err != nil {
			tb.Errorf("unmounting %s: %v", *dir, err)
		}
	})
	db, err := boltstore.Open(filepath.Join(*dir, "petstore.db"), store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if _, err := db.EnsureAdminToken(context.Background(), domaintest.AdminToken); err != nil {
		tb.Fatal(err)
	}
	return func(cfg *handlers.Config) { cfg.Store = db }
}

// fillDisk writes a file until dir's file system is full, and returns it.
func fillDisk(tb testing.TB, dir string) string {
	tb.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for n := len(chunk); n > 0; n /= 2 { // the last bytes too
		for i := 0; ; i++ {
			if i > 1<<14 {
				tb.Fatal("the disk never filled up")
			}
			if _, err := f.Write(chunk[:n]); errors.Is(err, syscall.ENOSPC) {
				break
			} else if err != nil {
				tb.Fatal(err)
			}
		}
	}
	return path
}

// A full disk is 507 insufficient_storage with Retry-After on the public and
// the admin API (documented in both), /readyz is 503 while writes fail, and
// the service recovers by itself once there is space again.
func TestStoreFault_DiskFullIsInsufficientStorage(t *testing.T) {
	var dir string
	ts := newTestServer(t, onSmallDisk(t, &dir))
	ts.do(http.MethodPost, "/categories", `{"name":"dogs"}`).wantStatus(http.StatusCreated)
	filler := fillDisk(t, dir)

	var r *response
	for i := 0; i < 1000; i++ { // bbolt may still have pages to reuse; new pets need more
		if r = ts.do(http.MethodPost, "/pets", `{"name":"Rex","categoryId":1}`); r.status != http.StatusCreated {
			break
		}
	}
	r.wantError(http.StatusInsufficientStorage, "insufficient_storage")
	if got := r.header.Get("Retry-After"); got == "" {
		t.Error("507 without Retry-After")
	}
	ts.do(http.MethodGet, "/readyz", "").wantError(http.StatusServiceUnavailable, "unavailable")
	for i := 0; i < 1000; i++ {
		if r = ts.adminDo(http.MethodPost, "/admin/api-keys", `{"name":"while full"}`); r.status != http.StatusCreated {
			break
		}
	}
	r.wantError(http.StatusInsufficientStorage, "insufficient_storage")

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	ts.do(http.MethodGet, "/readyz", "").wantStatus(http.StatusOK)
	ts.do(http.MethodPost, "/pets", `{"name":"Rex","categoryId":1}`).wantStatus(http.StatusCreated)
}
