package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"petstore/store/postgres/pgtest"
)

// TestFrozenDatabase: a database whose every process is stopped (SIGSTOP:
// a host frozen or swapping, whose sockets stay open and answer nothing)
// under requests on the pool's open connections and on new ones fails
// each request with 503 database_unavailable and Retry-After within the
// timeouts, never a hang; /healthz answers at once throughout, and the
// service takes writes again once the database runs.
func TestFrozenDatabase(t *testing.T) {
	parallel(t)
	cluster := pgtest.Private(t)
	databaseURL, err := cluster.NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	in := start(t, nil, pgFlags(databaseURL)...)
	key := createKey(t, in, "frozen")
	if code, body := in.call(t, "POST", "/categories", `{"name":"dogs"}`, "X-API-Key", key); code != 201 {
		t.Fatalf("a category: %d %s", code, body)
	}
	if err := cluster.Pause(); err != nil {
		t.Fatal(err)
	}
	frozen := true
	defer func() {
		if frozen {
			_ = cluster.Continue()
		}
	}()
	// The longest a request may take: a new connection's connect timeout,
	// the acquire timeout and the transaction timeout (pgFlags), and a
	// margin for a loaded machine.
	const bound = 1*time.Second + 2*time.Second + 3*time.Second + 3*time.Second
	var wg sync.WaitGroup
	for i := range 24 {
		r := [][]string{
			{"GET", "/pets", ""}, {"GET", "/categories/1", ""},
			{"POST", "/categories", `{"name":"cats"}`, "X-API-Key", key},
			{"POST", "/pets", `{"name":"Rex","categoryId":1}`, "X-API-Key", key, "Idempotency-Key", "frozen"},
			{"POST", "/admin/api-keys", `{"name":"x"}`, adminAuth[0], adminAuth[1]},
			{"GET", "/readyz", ""},
		}[i%6]
		wg.Go(func() {
			began := time.Now()
			code, body, header := in.get(t, r[0], r[1], r[2], r[3:]...)
			wantUnavailable(t, r[0]+" "+r[1]+" with the database frozen", code, body, header)
			if took := time.Since(began); took > bound {
				t.Errorf("%s %s with the database frozen took %v, more than %v", r[0], r[1], took.Round(time.Millisecond), bound)
			}
		})
	}
	began := time.Now()
	if code, body := in.call(t, "GET", "/healthz", ""); code != 200 || time.Since(began) > time.Second {
		t.Errorf("/healthz with the database frozen: %d %s after %v", code, body, time.Since(began))
	}
	wg.Wait()
	if err := cluster.Continue(); err != nil {
		t.Fatal(err)
	}
	frozen = false
	waitFor(t, "a write once the database runs", 30*time.Second, func() bool {
		code, _ := in.call(t, "POST", "/categories", `{"name":"back"}`, "X-API-Key", key)
		return code == 201
	})
}

// TestShutdownWithAFrozenDatabase: a SIGTERM right after requests were cut
// off from a frozen database by their timeouts ends within
// --shutdown-timeout and a few seconds: the connections the database no
// longer answers are not waited for while they close.
func TestShutdownWithAFrozenDatabase(t *testing.T) {
	parallel(t)
	cluster := pgtest.Private(t)
	databaseURL, err := cluster.NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	in := start(t, nil, pgFlags(databaseURL, "--shutdown-timeout", "2s")...)
	key := createKey(t, in, "frozen")
	if err := cluster.Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cluster.Continue() }()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			code, body, header := in.get(t, "POST", "/categories", `{"name":"cats"}`, "X-API-Key", key)
			wantUnavailable(t, "POST /categories with the database frozen", code, body, header)
		})
	}
	wg.Wait()
	in.stopWithin(t, 2*time.Second+5*time.Second)
}
