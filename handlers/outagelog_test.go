package handlers_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/handlers"
	"petstore/store"
	"petstore/store/postgres/pgtest"
)

// TestOutageDoesNotFloodTheLog: while PostgreSQL is down every request
// fails alike. Each keeps its answer (503 database_unavailable with
// Retry-After) and its access line, but only the first of each cause is
// logged as a failure, in full and as the database's failure, also when it
// met the API key's check; the others are counted in a summary line a
// minute.
func TestOutageDoesNotFloodTheLog(t *testing.T) {
	t.Parallel()
	cluster := pgtest.Private(t)
	dbURL, err := cluster.NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var logs domaintest.SyncBuffer
	ts := startOnPostgres(t, dbURL, func(c *handlers.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	if err := cluster.Halt(); err != nil {
		t.Fatal(err)
	}
	before := len(strings.Split(strings.TrimSpace(logs.String()), "\n"))
	began := time.Now()
	const requests = 60
	causes := map[string]bool{} // the answers' messages
	for i := range requests / 3 {
		for _, r := range []*response{
			ts.do(http.MethodPost, "/categories", `{"name":"x"}`), // the API key is looked up in the database
			ts.do(http.MethodGet, "/pets", ""),
			ts.adminDo(http.MethodGet, "/admin/project", ""),
		} {
			r.wantError(http.StatusServiceUnavailable, store.EUNAVAILABLE)
			if r.header.Get("Retry-After") == "" {
				t.Fatalf("round %d: a 503 without Retry-After: %s", i, r.body)
			}
			causes[r.message()] = true
		}
	}
	windows := 1 + int(time.Since(began)/time.Minute)
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")[before:]
	var access, failed []string
	for _, l := range lines {
		switch {
		case strings.Contains(l, " msg=request "):
			access = append(access, l)
		case strings.Contains(l, `msg="request failed"`):
			failed = append(failed, l)
		}
	}
	t.Logf("%d failed requests of %d causes: %d log lines, %d access lines, %d failure lines", requests, len(causes), len(lines), len(access), len(failed))
	if len(access) != requests {
		t.Errorf("%d access lines for %d requests", len(access), requests)
	}
	if len(failed) < len(causes) || len(failed) > len(causes)*windows || len(lines) > requests+2*len(causes)*windows {
		t.Fatalf("%d failed requests of %d causes wrote %d lines, %d of them failures, want one a cause:\n%s",
			requests, len(causes), len(lines), len(failed), strings.Join(lines, "\n"))
	}
	if first := failed[0]; !strings.Contains(first, "route=/categories") || !strings.Contains(first, `err="database_unavailable: `) ||
		!strings.Contains(first, "connection refused") || strings.Contains(first, "security requirements") {
		t.Errorf("the first failure is not logged in full as the database's failure:\n%s", first)
	}
}
