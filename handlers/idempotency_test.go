package handlers_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/handlers"
	"petstore/store"
	"petstore/store/postgres/pgtest"
)

// keyed sends a public write with the API key and an Idempotency-Key.
func (ts *testServer) keyed(method, path, body, key string) *response {
	ts.tb.Helper()
	return ts.send(method, path, body, http.Header{"X-API-Key": {ts.apiKey}, "Idempotency-Key": {key}})
}

// stock reads a pet's stock through the API.
func (ts *testServer) stock(petID int64) int {
	ts.tb.Helper()
	var it store.InventoryItem
	ts.do("GET", fmt.Sprintf("/store/inventory/%d", petID), "").wantStatus(200).decode(&it)
	return it.Quantity
}

// wantReplayOf fails unless r is first's answer given again, with
// Idempotent-Replayed.
func (r *response) wantReplayOf(first *response) *response {
	r.tb.Helper()
	if r.status != first.status || !bytes.Equal(r.body, first.body) {
		r.tb.Fatalf("replay: %d %s, want %d %s", r.status, r.body, first.status, first.body)
	}
	for _, h := range []string{"Location", "ETag", "Content-Type"} {
		if r.header.Get(h) != first.header.Get(h) {
			r.tb.Errorf("replay: %s %q, want %q", h, r.header.Get(h), first.header.Get(h))
		}
	}
	if got := r.header.Get("Idempotent-Replayed"); got != "true" {
		r.tb.Errorf("replay: Idempotent-Replayed %q, want true", got)
	}
	return r
}

// TestIdempotencyKeyReplays: a POST retried with its Idempotency-Key gets
// the first answer again, marked replayed, and is performed once: the
// order's stock is taken once. The same key with another request is 422,
// and another credential's key of the same name is another key. On both
// stores.
func TestIdempotencyKeyReplays(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) { testKeyReplays(t, newTestServer(t)) })
	t.Run("postgres", func(t *testing.T) { testKeyReplays(t, withAPIKey(startOnPostgres(t, pgtest.URL(t)))) })
}

// withAPIKey gives ts an API key of its own.
func withAPIKey(ts *testServer) *testServer {
	res := ts.adminDo(http.MethodPost, "/admin/api-keys", `{"name":"tests"}`).wantStatus(http.StatusCreated)
	var key struct{ Secret string }
	res.decode(&key)
	ts.apiKey = key.Secret
	return ts
}

func testKeyReplays(t *testing.T, ts *testServer) {
	_, rex := ts.addRex(10)
	order := fmt.Sprintf(`{"petId":%d,"quantity":3}`, rex.ID)
	first := ts.keyed("POST", "/store/orders", order, "order-1").wantStatus(201)
	if first.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("a first answer is marked replayed")
	}
	ts.keyed("POST", "/store/orders", order, "order-1").wantReplayOf(first)
	ts.keyed("POST", "/store/orders", order, "order-1").wantReplayOf(first)
	if n := ts.stock(rex.ID); n != 7 {
		t.Errorf("stock %d after an order retried twice, want 7", n)
	}
	var o store.Order
	first.decode(&o)
	ts.send("GET", first.header.Get("Location"), "", nil).wantStatus(200)

	// Another body, another path: 422, nothing written.
	r := ts.keyed("POST", "/store/orders", fmt.Sprintf(`{"petId":%d,"quantity":4}`, rex.ID), "order-1").
		wantError(422, "idempotency_key_reused")
	if want := `Idempotency-Key "order-1" was first used with another request (method, path or body); send a new request with a new key`; r.message() != want {
		t.Errorf("message %q, want %q", r.message(), want)
	}
	ts.keyed("POST", "/pets", fmt.Sprintf(`{"name":"Max","categoryId":%d}`, rex.CategoryID), "order-1").wantError(422, "idempotency_key_reused")
	if n := ts.stock(rex.ID); n != 7 {
		t.Errorf("stock %d after refused reuses, want 7", n)
	}

	// Pets and categories too.
	cat := ts.keyed("POST", "/categories", `{"name":"cats"}`, "cat-1").wantStatus(201)
	ts.keyed("POST", "/categories", `{"name":"cats"}`, "cat-1").wantReplayOf(cat)
	pet := ts.keyed("POST", "/pets", fmt.Sprintf(`{"name":"Tom","categoryId":%d}`, rex.CategoryID), `"pet-1"`).wantStatus(201)
	// The draft's quoted form and the bare key are one key.
	ts.keyed("POST", "/pets", fmt.Sprintf(`{"name":"Tom","categoryId":%d}`, rex.CategoryID), `pet-1`).wantReplayOf(pet)
	var pets []store.Pet
	ts.do("GET", fmt.Sprintf("/pets?categoryId=%d", rex.CategoryID), "").wantStatus(200).decode(&pets)
	if len(pets) != 2 {
		t.Errorf("%d pets in the category, want 2 (Rex, Tom once)", len(pets))
	}

	// Another API key's "order-1" is its own.
	other := *ts
	withAPIKey(&other)
	other.keyed("POST", "/store/orders", fmt.Sprintf(`{"petId":%d,"quantity":4}`, rex.ID), "order-1").wantStatus(201)
	if n := ts.stock(rex.ID); n != 3 {
		t.Errorf("stock %d after another key's order, want 3", n)
	}

	// A refused order keeps nothing: once there is stock, its retry places it.
	big := fmt.Sprintf(`{"petId":%d,"quantity":5}`, rex.ID)
	ts.keyed("POST", "/store/orders", big, "order-2").wantError(409, "insufficient_stock")
	ts.do("PUT", fmt.Sprintf("/store/inventory/%d", rex.ID), `{"quantity":5}`).wantStatus(200)
	placed := ts.keyed("POST", "/store/orders", big, "order-2").wantStatus(201)
	if placed.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("the retry of a refused order is marked replayed")
	}
	if n := ts.stock(rex.ID); n != 0 {
		t.Errorf("stock %d, want 0", n)
	}
}

// TestIdempotencyKeyBadKeys: a key that is empty, too long, not printable
// ASCII or sent twice is 400, naming the header, and nothing is written.
func TestIdempotencyKeyBadKeys(t *testing.T) {
	ts := newTestServer(t)
	cat, _ := ts.addRex(0)
	body := fmt.Sprintf(`{"name":"Max","categoryId":%d}`, cat.ID)
	for _, c := range []struct {
		name    string
		keys    []string
		message string
	}{
		{"empty", []string{""}, "header Idempotency-Key: empty; send a unique key, such as a UUID, or no header"},
		{"quoted empty", []string{`""`}, "header Idempotency-Key: empty; send a unique key, such as a UUID, or no header"},
		{"too long", []string{strings.Repeat("k", 256)}, "header Idempotency-Key: 256 characters; at most 255 are allowed"},
		{"quoted too long", []string{`"` + strings.Repeat("k", 256) + `"`}, "header Idempotency-Key: 256 characters; at most 255 are allowed"},
		{"not ASCII", []string{"schlüssel"}, "header Idempotency-Key: only printable ASCII characters are allowed (character 5 is not)"},
		{"a bad escape", []string{`"a\b"`}, `header Idempotency-Key: a quoted key may escape only \" and \\`},
		{"twice", []string{"a", "b"}, "header Idempotency-Key: send one key, not 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := ts.with(t).send("POST", "/pets", body, http.Header{"X-API-Key": {ts.apiKey}, "Idempotency-Key": c.keys}).wantError(400, "invalid_request")
			if r.message() != c.message {
				t.Errorf("message %q, want %q", r.message(), c.message)
			}
		})
	}
	ts.keyed("POST", "/pets", body, strings.Repeat("k", 255)).wantStatus(201)
	var pets []store.Pet
	ts.do("GET", fmt.Sprintf("/pets?categoryId=%d", cat.ID), "").wantStatus(200).decode(&pets)
	if len(pets) != 2 {
		t.Errorf("%d pets, want 2: Rex and the one with a 255-character key", len(pets))
	}
	// Without a credential the key changes nothing: 401.
	ts.send("POST", "/pets", body, http.Header{"Idempotency-Key": {"k"}}).wantError(401, "unauthorized")
}

// TestIdempotencyKeyExpires: once its answer has expired
// (--idempotency-ttl), a key is free again, for another request too.
func TestIdempotencyKeyExpires(t *testing.T) {
	ts := newTestServer(t, func(c *handlers.Config) { c.IdempotencyTTL = time.Nanosecond })
	cat, _ := ts.addRex(0)
	ts.keyed("POST", "/pets", fmt.Sprintf(`{"name":"Max","categoryId":%d}`, cat.ID), "k").wantStatus(201)
	r := ts.keyed("POST", "/pets", fmt.Sprintf(`{"name":"Tom","categoryId":%d}`, cat.ID), "k").wantStatus(201)
	if r.header.Get("Idempotent-Replayed") != "" {
		t.Error("an expired key's new request is marked replayed")
	}
}

// TestIdempotencyKeyConcurrent: 200 requests with one key at once place
// one order; every other one gets its answer replayed or 409
// idempotency_in_progress with Retry-After. On both stores, and on
// PostgreSQL through two instances.
func TestIdempotencyKeyConcurrent(t *testing.T) {
	noCap := func(c *handlers.Config) { c.MaxClientInFlight = -1 }
	t.Run("bbolt", func(t *testing.T) {
		ts := newTestServer(t, noCap)
		testKeyConcurrent(t, ts, ts)
	})
	t.Run("postgres, two instances", func(t *testing.T) {
		dbURL := pgtest.URL(t)
		a := withAPIKey(startOnPostgres(t, dbURL, noCap))
		b := startOnPostgres(t, dbURL, noCap)
		b.apiKey = a.apiKey
		rex := testKeyConcurrent(t, a, b)
		// The first request on A, its retry on B.
		body := fmt.Sprintf(`{"petId":%d,"quantity":2}`, rex.ID)
		first := a.keyed("POST", "/store/orders", body, "a-then-b").wantStatus(201)
		b.keyed("POST", "/store/orders", body, "a-then-b").wantReplayOf(first)
		if s := b.stock(rex.ID); s != 997 {
			t.Errorf("stock %d, want 997", s)
		}
	})
}

func testKeyConcurrent(t *testing.T, a, b *testServer) store.Pet {
	_, rex := a.addRex(1000)
	body := fmt.Sprintf(`{"petId":%d,"quantity":1}`, rex.ID)
	const n = 200
	results := make([]*response, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		ts := a
		if i%2 == 1 {
			ts = b
		}
		wg.Go(func() {
			<-start
			results[i] = ts.keyed("POST", "/store/orders", body, "one")
		})
	}
	close(start)
	wg.Wait()
	var first *response
	replayed, busy := 0, 0
	for _, r := range results {
		switch {
		case r.status == 201 && r.header.Get("Idempotent-Replayed") == "":
			if first != nil {
				t.Fatalf("two orders placed: %s and %s", first.body, r.body)
			}
			first = r
		case r.status == 201:
			replayed++
		case r.status == 409 && r.header.Get("Retry-After") != "" && strings.Contains(string(r.body), "idempotency_in_progress"):
			busy++
		default:
			t.Fatalf("unexpected answer %d %v %s", r.status, r.header, r.body)
		}
	}
	if first == nil {
		t.Fatal("no order placed")
	}
	for _, r := range results {
		if r.status == 201 && r != first && !bytes.Equal(r.body, first.body) {
			t.Errorf("a replay %s differs from the order %s", r.body, first.body)
		}
	}
	t.Logf("1 order placed, %d replays, %d answered 409", replayed, busy)
	if s := a.stock(rex.ID); s != 999 {
		t.Errorf("stock %d, want 999: one order", s)
	}
	// Once the first is done, every retry replays it, on either instance.
	a.keyed("POST", "/store/orders", body, "one").wantReplayOf(first)
	b.keyed("POST", "/store/orders", body, "one").wantReplayOf(first)
	return rex
}

// TestIdempotencyKeyHeldByAStuckTransaction: on PostgreSQL, a key that
// another transaction claimed and holds without committing (an instance
// stuck mid-write) makes its retry wait only up to the database's
// timeouts, then 503 database_unavailable with Retry-After, with nothing
// written; requests without the key are served meanwhile, and once the
// stuck transaction rolls back the retry is performed.
func TestIdempotencyKeyHeldByAStuckTransaction(t *testing.T) {
	dbURL := pgtest.URL(t)
	ts := withAPIKey(startOnPostgres(t, dbURL))
	cat, _ := ts.addRex(0)
	sum := sha256.Sum256([]byte(ts.apiKey))
	scope := "key:" + hex.EncodeToString(sum[:12])
	side := pgtest.Connect(t, dbURL)
	ctx := context.Background()
	if err := side.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if err := side.Exec(ctx, fmt.Sprintf(`INSERT INTO idempotency_keys (scope, key, fingerprint, created_at, expires_at)
		VALUES ('%s', 'stuck', '\x00', now(), now() + interval '1 hour')`, scope)); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"name":"Max","categoryId":%d}`, cat.ID)
	r := ts.keyed("POST", "/pets", body, "stuck").wantError(503, "database_unavailable")
	if r.header.Get("Retry-After") == "" {
		t.Error("no Retry-After on the 503")
	}
	ts.do("POST", "/pets", fmt.Sprintf(`{"name":"Tom","categoryId":%d}`, cat.ID)).wantStatus(201)
	if err := side.Exec(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	first := ts.keyed("POST", "/pets", body, "stuck").wantStatus(201)
	if first.header.Get("Idempotent-Replayed") != "" {
		t.Error("the retry after the rollback is marked replayed")
	}
	var pets []store.Pet
	ts.do("GET", fmt.Sprintf("/pets?categoryId=%d", cat.ID), "").wantStatus(200).decode(&pets)
	if len(pets) != 3 {
		t.Errorf("%d pets, want 3: Rex, Tom, and Max once", len(pets))
	}
}
