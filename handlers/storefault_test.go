package handlers_test

import (
	"net/http"
	"os"
	"testing"
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
