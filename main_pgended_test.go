package main

import (
	"context"
	"sync"
	"testing"

	"petstore/store/postgres/pgtest"
)

// TestSessionsEndedUnderTheService: the database ends every session of
// the service (pg_terminate_backend, as an administrator, a pooler's
// restart or a failover's fencing does) while it stays up. The pool's
// connections are all dead, found so only when used: a write or a read
// that meets one before anything ran is run again on a new connection,
// as the page promises, so every request is answered 2xx.
func TestSessionsEndedUnderTheService(t *testing.T) {
	parallel(t)
	databaseURL := pgtest.URL(t)
	in := start(t, nil, pgFlags(databaseURL)...)
	key := createKey(t, in, "ended")
	if code, body := in.call(t, "POST", "/categories", `{"name":"dogs"}`, "X-API-Key", key); code != 201 {
		t.Fatalf("a category: %d %s", code, body)
	}
	for round := range 3 {
		// Several connections open in the pool.
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() { in.call(t, "GET", "/categories", "") })
		}
		wg.Wait()
		if n, err := pgtest.TerminateOthers(context.Background(), databaseURL); err != nil || n == 0 {
			t.Fatalf("ending the service's sessions: %d, %v", n, err)
		}
		// First an admin write: the admin token is checked in memory, so
		// the write's own transaction meets a dead connection first.
		if code, body := in.call(t, "POST", "/admin/api-keys", `{"name":"k"}`, adminAuth...); code != 201 {
			t.Errorf("round %d: an admin write right after the sessions were ended: %d %s", round, code, body)
		}
		for _, r := range [][]string{
			{"POST", "/categories", `{"name":"cats"}`}, {"POST", "/pets", `{"name":"Rex","categoryId":1}`},
			{"GET", "/categories", ""}, {"PUT", "/categories/1", `{"name":"dogs"}`},
		} {
			if code, body, _ := in.get(t, r[0], r[1], r[2], "X-API-Key", key); code/100 != 2 {
				t.Errorf("round %d: %s %s right after the sessions were ended: %d %s", round, r[0], r[1], code, body)
			}
		}
	}
}
