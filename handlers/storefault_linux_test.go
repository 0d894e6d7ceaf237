package handlers_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	*dir = domaintest.MountSmallDisk(tb, 4<<20)
	db, err := boltstore.Open(filepath.Join(*dir, "petstore.db"), store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if _, err := db.EnsureAdminToken(context.Background(), domaintest.AdminToken); err != nil {
		tb.Fatal(err)
	}
	return func(cfg *handlers.Config) { cfg.Store, cfg.File = db, db }
}

// A full disk is 507 insufficient_storage with Retry-After on the public and
// the admin API (documented in both), /readyz is 503 while writes fail, and
// the service recovers by itself once there is space again. The log says
// when readiness turns, not at each probe.
func TestStoreFault_DiskFullIsInsufficientStorage(t *testing.T) {
	var dir string
	var logs domaintest.SyncBuffer
	ts := newTestServer(t, onSmallDisk(t, &dir), func(c *handlers.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	ts.do(http.MethodPost, "/categories", `{"name":"dogs"}`).wantStatus(http.StatusCreated)
	filler := domaintest.FillDisk(t, dir)

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
	// Every write fails alike: the log has the first in full, not a line each.
	began := time.Now()
	for range 20 {
		r := ts.do(http.MethodPost, "/pets", `{"name":"Rex","categoryId":1}`).wantError(http.StatusInsufficientStorage, "insufficient_storage")
		if r.header.Get("Retry-After") == "" {
			t.Fatal("507 without Retry-After")
		}
	}
	if n := strings.Count(logs.String(), `msg="request failed"`); n == 0 || n > 1+int(time.Since(began)/time.Minute) {
		t.Errorf("21 writes on a full disk logged %d 'request failed' lines, want the first:\n%s", n, logs.String())
	}
	for range 5 {
		if r := ts.do(http.MethodGet, "/readyz", "").wantError(http.StatusServiceUnavailable, "unavailable"); !strings.Contains(string(r.body), "the disk is full") {
			t.Errorf("/readyz on a full disk does not say why: %s", r.body)
		}
	}
	if n := strings.Count(logs.String(), "readiness check failed"); n != 1 {
		t.Errorf("5 probes on a full disk logged %d 'readiness check failed' lines, want 1:\n%s", n, logs.String())
	}
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
	if !strings.Contains(logs.String(), "readiness check passes again") {
		t.Errorf("the log does not say that readiness came back:\n%s", logs.String())
	}
	ts.do(http.MethodPost, "/pets", `{"name":"Rex","categoryId":1}`).wantStatus(http.StatusCreated)
}
