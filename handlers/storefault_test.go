package handlers_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"petstore/domains/domaintest"
	"petstore/handlers"
	"petstore/store"
)

// A data file cut while the server runs: the first write used to end the
// process from the store's committer goroutine. Now that write and the next
// ones get an Error body, the process stays up (/healthz, and the test
// itself), and /readyz says the store is not ready.
func TestStoreFault_FileCutWhileRunningFailsWritesNotTheProcess(t *testing.T) {
	ts := newTestServer(t)
	ts.do(http.MethodPost, "/categories", `{"name":"dogs"}`).wantStatus(http.StatusCreated)
	ts.do(http.MethodGet, "/readyz", "").wantStatus(http.StatusOK)
	// Two pages: the meta pages alone, every bucket gone.
	if err := os.Truncate(ts.db.Path(), 8<<10); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		ts.do(http.MethodPost, "/pets", `{"name":"Rex","categoryId":1}`).wantError(http.StatusInternalServerError, "internal")
	}
	ts.do(http.MethodGet, "/healthz", "").wantStatus(http.StatusOK)
	ts.do(http.MethodGet, "/readyz", "").wantError(http.StatusServiceUnavailable, "unavailable")
}

// A damaged page in the data file (a bad sector under the pets' leaf): the
// write that meets it gets 500, and from then on /readyz answers 503,
// naming the file and saying to restore a backup, even after writes
// elsewhere in the file commit; the log says so once. A restart (a new
// store and server on the file) is ready again.
func TestStoreFault_DamagedPageKeepsReadyzUnreadyUntilRestart(t *testing.T) {
	var logs domaintest.SyncBuffer
	ts := newTestServer(t, func(c *handlers.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	ts.do(http.MethodPost, "/categories", `{"name":"dogs"}`).wantStatus(http.StatusCreated)
	ts.do(http.MethodPost, "/pets", `{"name":"damaged-target","categoryId":1}`).wantStatus(http.StatusCreated)
	for range 300 { // so that later pets go to other leaves
		if err := ts.db.CreatePet(context.Background(), &store.Pet{Name: "bulk", CategoryID: 1}); err != nil {
			t.Fatal(err)
		}
	}
	ts.do(http.MethodGet, "/readyz", "").wantStatus(http.StatusOK)
	domaintest.DamagePages(t, ts.db.Path(), []byte("damaged-target"))

	ts.do(http.MethodPut, "/pets/1", `{"name":"renamed","categoryId":1}`).wantError(http.StatusInternalServerError, "internal")
	for range 3 {
		ts.do(http.MethodPost, "/pets", `{"name":"elsewhere","categoryId":1}`).wantStatus(http.StatusCreated)
		res := ts.do(http.MethodGet, "/readyz", "").wantError(http.StatusServiceUnavailable, "unavailable")
		for _, want := range []string{ts.db.Path(), "restore it from a backup"} {
			if !strings.Contains(res.message(), want) {
				t.Errorf("/readyz: %q does not say %q", res.message(), want)
			}
		}
	}
	ts.do(http.MethodGet, "/healthz", "").wantStatus(http.StatusOK)
	if m := ts.adminDo(http.MethodGet, "/metrics", "").wantStatus(http.StatusOK); !strings.Contains(string(m.body), "\npetstore_store_damaged 1\n") {
		t.Errorf("/metrics does not say petstore_store_damaged 1:\n%s", m.body)
	}
	if n := strings.Count(logs.String(), "the data store is damaged"); n != 1 {
		t.Errorf("the damage was logged %d times, want once:\n%s", n, logs.String())
	}

	// The restart: the same file, a new store and server.
	if err := ts.db.Close(); err != nil {
		t.Fatal(err)
	}
	db := domaintest.OpenStoreFile(t, ts.db.Path(), store.Options{})
	srv, err := handlers.New(serverConfig(t, db))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("/readyz after the restart: %d %s", rec.Code, rec.Body)
	}
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Host = "localhost"
	req.Header.Set("Authorization", "Bearer "+ts.admin)
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if !strings.Contains(rec.Body.String(), "\npetstore_store_damaged 0\n") {
		t.Errorf("/metrics after the restart: %d, no petstore_store_damaged 0", rec.Code)
	}
}
