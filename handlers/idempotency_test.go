package handlers_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/events/webhooktest"
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
	ts, cat, _ := newServerWithRex(t, 0)
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
	first, replayed, busy := sendAtOnce(t, 200, a, b, "order placed", func(ts *testServer) *response {
		return ts.keyed("POST", "/store/orders", body, "one")
	})
	t.Logf("1 order placed, %d replays, %d answered 409", replayed, busy)
	if s := a.stock(rex.ID); s != 999 {
		t.Errorf("stock %d, want 999: one order", s)
	}
	// Once the first is done, every retry replays it, on either instance.
	a.keyed("POST", "/store/orders", body, "one").wantReplayOf(first)
	b.keyed("POST", "/store/orders", body, "one").wantReplayOf(first)
	return rex
}

// sendAtOnce sends n requests with one Idempotency-Key at once, every
// other one through b, and sorts their answers: the one that did the
// work (first, 201), the replays of its answer (201, Idempotent-Replayed,
// the same body), and those that found it under way (409
// idempotency_in_progress with Retry-After). Any other answer, what was
// done twice or not at all fails t.
func sendAtOnce(t *testing.T, n int, a, b *testServer, what string, send func(ts *testServer) *response) (first *response, replayed, busy int) {
	t.Helper()
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
			results[i] = send(ts)
		})
	}
	close(start)
	wg.Wait()
	for _, r := range results {
		switch {
		case r.status == 201 && r.header.Get("Idempotent-Replayed") == "":
			if first != nil {
				t.Fatalf("%s twice: %s and %s", what, first.body, r.body)
			}
			first = r
		case r.status == 201:
			replayed++
		case r.status == 409 && r.header.Get("Retry-After") != "" && strings.Contains(string(r.body), store.EIDEMPOTENCYBUSY):
			busy++
		default:
			t.Fatalf("unexpected answer %d %v %s", r.status, r.header, r.body)
		}
	}
	if first == nil {
		t.Fatalf("no %s", what)
	}
	for _, r := range results {
		if r.status == 201 && r != first && !bytes.Equal(r.body, first.body) {
			t.Errorf("a replay %s differs from the first answer %s", r.body, first.body)
		}
	}
	return first, replayed, busy
}

// TestIdempotencyKeyHeldByAStuckTransaction: on PostgreSQL, a key that
// another transaction claimed and holds without committing (an instance
// stuck mid-write) makes its retry wait only up to the database's
// timeouts, then 503 database_unavailable with Retry-After, with nothing
// written; requests without the key are served meanwhile, and once the
// stuck transaction rolls back the retry is performed.
func TestIdempotencyKeyHeldByAStuckTransaction(t *testing.T) {
	t.Parallel()
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

// adminKeyed sends an admin request with the admin token and an
// Idempotency-Key.
func (ts *testServer) adminKeyed(method, path, body, key string) *response {
	ts.tb.Helper()
	return ts.send(method, path, body, http.Header{"Authorization": {"Bearer " + ts.admin}, "Idempotency-Key": {key}})
}

// storedKey is a hash of key, in hex.
func storedKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// sealedKey is what a store keeps in place of an Idempotency-Key of the
// admin token's: derived from the token and the key.
func (ts *testServer) sealedKey(key string) string {
	sum := sha256.Sum256([]byte(ts.admin))
	w := store.IdempotentWrite{Scope: "admin:" + hex.EncodeToString(sum[:12]), Key: key, Sealed: true, Credential: ts.admin}
	return w.StoredKey()
}

// rawStore reads what a store holds as an intruder would: held reports
// whether s appears anywhere in the stored answers of Idempotency-Keys (on
// bbolt, anywhere in the file), stored whether a key's row is there.
type rawStore struct {
	held   func(t *testing.T, s string) bool
	stored func(t *testing.T, key string) bool
	// control is a text that held must find, so that the search is seen
	// to work.
	control string
}

// TestIdempotencyKeyAdmin: every POST of the admin API takes an
// Idempotency-Key. Retried, each is performed once and answers the first
// answer again: a new API key's secret, which authenticates; a webhook's
// signing secret, which signs; a rotated secret; one test event, one
// delivery retry, one domain. The key with another request is 422. The
// stored answers hold no secret and no key in clear. On both stores.
func TestIdempotencyKeyAdmin(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) {
		ts := newTestServer(t, withEvents(t))
		file := func(t *testing.T) []byte {
			b, err := os.ReadFile(ts.db.Path())
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		testAdminKeys(t, ts, rawStore{
			// A webhook's record holds its signing secret (it signs with
			// it): the file is searched for API key secrets and keys.
			held:    func(t *testing.T, s string) bool { return bytes.Contains(file(t), []byte(s)) },
			stored:  func(t *testing.T, key string) bool { return bytes.Contains(file(t), []byte(ts.sealedKey(key))) },
			control: "deploy-bot", // the API key's name, in its record
		}, false)
	})
	t.Run("postgres", func(t *testing.T) {
		dbURL := pgtest.URL(t)
		ts := startOnPostgres(t, dbURL, withEvents(t))
		if err := ts.srv.RecordDeploy(context.Background()); err != nil {
			t.Fatal(err)
		}
		side := pgtest.Connect(t, dbURL)
		count := func(t *testing.T, sql string) int64 {
			n, err := side.Int64s(context.Background(), sql)
			if err != nil || len(n) != 1 {
				t.Fatalf("%s: %v %v", sql, n, err)
			}
			return n[0]
		}
		testAdminKeys(t, ts, rawStore{
			held: func(t *testing.T, s string) bool {
				return count(t, fmt.Sprintf(`SELECT count(*) FROM idempotency_keys
					WHERE position(convert_to('%s', 'UTF8') IN answer) > 0 OR position(convert_to('%[1]s', 'UTF8') IN fingerprint) > 0
					OR key = '%[1]s' OR scope LIKE '%%%[1]s%%'`, s)) > 0
			},
			stored: func(t *testing.T, key string) bool {
				return count(t, fmt.Sprintf(`SELECT count(*) FROM idempotency_keys WHERE key = '%s' AND answer IS NOT NULL`, ts.sealedKey(key))) == 1
			},
			control: "admin:", // the scope of the admin token's keys
		}, true)
	})
}

func testAdminKeys(t *testing.T, ts *testServer, raw rawStore, rawHooks bool) {
	// Keys as clients make them: random, so the test's own are unique.
	key := func(name string) string { return name + "-" + storedKey(t.Name() + name + time.Now().String())[:16] }
	kKey, kHook, kRotate, kTest, kRetry, kDomain, kVerify := key("apikey"), key("hook"), key("rotate"), key("test"), key("retry"), key("domain"), key("verify")

	// An API key: one created, the same secret answered twice, and it
	// authenticates. An API key sent beside the token changes nothing:
	// the key is the admin token's, and the answer is sealed.
	first := ts.send("POST", "/admin/api-keys", `{"name":"deploy-bot"}`, http.Header{
		"Authorization": {"Bearer " + ts.admin}, "Idempotency-Key": {kKey}, "X-API-Key": {ts.apiKey}}).wantStatus(201)
	if first.header.Get("Idempotent-Replayed") != "" {
		t.Error("a first answer is marked replayed")
	}
	ts.adminKeyed("POST", "/admin/api-keys", `{"name":"deploy-bot"}`, kKey).wantReplayOf(first)
	var created struct {
		ID     int64
		Secret string
	}
	first.decode(&created)
	ts.send("POST", "/categories", `{"name":"birds"}`, http.Header{"X-API-Key": {created.Secret}}).wantStatus(201)
	var keys []store.APIKey
	ts.adminDo("GET", "/admin/api-keys?limit=100", "").wantStatus(200).decode(&keys)
	n := 0
	for _, k := range keys {
		if k.Name == "deploy-bot" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d keys named deploy-bot, want 1", n)
	}
	r := ts.adminKeyed("POST", "/admin/api-keys", `{"name":"other-bot"}`, kKey).wantError(422, store.EIDEMPOTENCYREUSED)
	if want := fmt.Sprintf(`Idempotency-Key %q was first used with another request (method, path or body); send a new request with a new key`, kKey); r.message() != want {
		t.Errorf("message %q, want %q", r.message(), want)
	}
	// Another operation with the key is another request too.
	ts.adminKeyed("POST", "/admin/webhooks", `{"url":"http://127.0.0.1:9/","events":["pet.created"]}`, kKey).wantError(422, store.EIDEMPOTENCYREUSED)

	// A webhook: created once, its signing secret answered twice.
	rcv := webhooktest.Start(t, webhooktest.Options{})
	hookBody := `{"url":"` + rcv.URL + `","events":["pet.created"]}`
	hook := ts.adminKeyed("POST", "/admin/webhooks", hookBody, kHook).wantStatus(201)
	ts.adminKeyed("POST", "/admin/webhooks", hookBody, kHook).wantReplayOf(hook)
	var w webhookJSON
	hook.decode(&w)
	var hooks []webhookJSON
	ts.adminDo("GET", "/admin/webhooks", "").wantStatus(200).decode(&hooks)
	if len(hooks) != 1 {
		t.Errorf("%d webhooks, want 1", len(hooks))
	}
	path := fmt.Sprint("/admin/webhooks/", w.ID)

	// Its secret rotated once: the retry answers the same new secret, and
	// that secret signs (the receiver verifies with it).
	rotated := ts.adminKeyed("POST", path+"/rotate-secret", "", kRotate).wantStatus(200)
	ts.adminKeyed("POST", path+"/rotate-secret", "", kRotate).wantReplayOf(rotated)
	var rw webhookJSON
	rotated.decode(&rw)
	if rw.Secret == w.Secret || rw.Secret == "" {
		t.Fatalf("rotated secret %q, first %q", rw.Secret, w.Secret)
	}
	rcv.Trust(rw.Secret)

	// One test event, however often it is retried.
	test := ts.adminKeyed("POST", path+"/test", "", kTest).wantStatus(202)
	ts.adminKeyed("POST", path+"/test", "", kTest).wantReplayOf(test)
	var ev webhooktest.Event
	test.decode(&ev)
	var deliveries []struct {
		ID      int64  `json:"id"`
		EventID string `json:"eventId"`
		State   string `json:"state"`
	}
	domaintest.WaitFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		ts.adminDo("GET", path+"/deliveries", "").wantStatus(200).decode(&deliveries)
		if len(deliveries) != 1 || deliveries[0].State != store.DeliverySucceeded || deliveries[0].EventID != ev.ID {
			return fmt.Errorf("deliveries: %+v", deliveries)
		}
		return nil
	})
	if got := rcv.Events(); len(got) != 1 || got[0].ID != ev.ID {
		t.Errorf("received %+v, want the one test event %s", got, ev.ID)
	}

	// One retry of its delivery.
	retry := ts.adminKeyed("POST", fmt.Sprintf("%s/deliveries/%d/retry", path, deliveries[0].ID), "", kRetry).wantStatus(202)
	ts.adminKeyed("POST", fmt.Sprintf("%s/deliveries/%d/retry", path, deliveries[0].ID), "", kRetry).wantReplayOf(retry)
	domaintest.WaitFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		ts.adminDo("GET", path+"/deliveries", "").wantStatus(200).decode(&deliveries)
		if len(deliveries) != 2 || deliveries[0].State != store.DeliverySucceeded {
			return fmt.Errorf("deliveries after one retry: %+v", deliveries)
		}
		return nil
	})

	// A domain: attached once; its verify answers its first check again.
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)
	dom := ts.adminKeyed("POST", "/admin/domains", `{"name":"shop.example.test"}`, kDomain).wantStatus(201)
	ts.adminKeyed("POST", "/admin/domains", `{"name":"shop.example.test"}`, kDomain).wantReplayOf(dom)
	ts.adminKeyed("POST", "/admin/domains", `{"name":"api.example.test"}`, kDomain).wantError(422, store.EIDEMPOTENCYREUSED)
	ts.adminDo("GET", "/admin/domains/api.example.test", "").wantError(404, store.ENOTFOUND)
	verified := ts.adminKeyed("POST", "/admin/domains/shop.example.test/verify", "", kVerify).wantStatus(200)
	ts.adminKeyed("POST", "/admin/domains/shop.example.test/verify", "", kVerify).wantReplayOf(verified)
	ts.adminKeyed("POST", "/admin/domains/api.example.test/verify", "", kVerify).wantError(422, store.EIDEMPOTENCYREUSED)

	// What the store holds: every answer, under a key derived from its key
	// and the admin token, and
	// neither a secret nor a key in clear.
	for _, k := range []string{kKey, kHook, kRotate, kTest, kRetry, kDomain, kVerify} {
		if !raw.stored(t, k) {
			t.Errorf("no answer stored under the hash of %s", k)
		}
		if raw.held(t, k) {
			t.Errorf("the store holds the Idempotency-Key %s in clear", k)
		}
	}
	secrets := []string{created.Secret}
	if rawHooks {
		secrets = append(secrets, w.Secret, rw.Secret)
	}
	for _, s := range secrets {
		if raw.held(t, s) {
			t.Errorf("the store holds the secret %s… in clear", s[:10])
		}
	}
	if !raw.held(t, raw.control) {
		t.Errorf("the raw search does not find %q", raw.control)
	}
}

// TestIdempotencyKeyAdminConcurrent: many creations of an API key sent at
// once with one key create one key; the others answer its secret again or
// 409 idempotency_in_progress. On bbolt, and on PostgreSQL through two
// instances, where the retry on B of a creation on A answers A's secret.
func TestIdempotencyKeyAdminConcurrent(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) {
		ts := newTestServer(t)
		testAdminKeyConcurrent(t, ts, ts)
	})
	t.Run("postgres, two instances", func(t *testing.T) {
		dbURL := pgtest.URL(t)
		a, b := startOnPostgres(t, dbURL), startOnPostgres(t, dbURL)
		testAdminKeyConcurrent(t, a, b)
		first := a.adminKeyed("POST", "/admin/api-keys", `{"name":"a-then-b"}`, "a-then-b").wantStatus(201)
		b.adminKeyed("POST", "/admin/api-keys", `{"name":"a-then-b"}`, "a-then-b").wantReplayOf(first)
	})
}

func testAdminKeyConcurrent(t *testing.T, a, b *testServer) {
	first, replayed, busy := sendAtOnce(t, 50, a, b, "key created", func(ts *testServer) *response {
		return ts.adminKeyed("POST", "/admin/api-keys", `{"name":"race"}`, "one")
	})
	var keys []store.APIKey
	a.adminDo("GET", "/admin/api-keys?limit=100", "").wantStatus(200).decode(&keys)
	if c := len(slices.DeleteFunc(keys, func(k store.APIKey) bool { return k.Name != "race" })); c != 1 {
		t.Errorf("%d keys named race, want 1", c)
	}
	t.Logf("1 key created, %d replays, %d answered 409", replayed, busy)
	a.adminKeyed("POST", "/admin/api-keys", `{"name":"race"}`, "one").wantReplayOf(first)
	b.adminKeyed("POST", "/admin/api-keys", `{"name":"race"}`, "one").wantReplayOf(first)
}

// TestIdempotencyKeyAnswersOfAnOlderVersion: an answer an older version
// kept whole (status, headers and body, where this one keeps the record),
// found in the database this instance shares with it, is replayed as it
// was kept, and nothing is written.
func TestIdempotencyKeyAnswersOfAnOlderVersion(t *testing.T) {
	dbURL := pgtest.URL(t)
	ts := startOnPostgres(t, dbURL)
	body := `{"name":"Rex","categoryId":1}`
	scope := sha256.Sum256([]byte(ts.apiKey))
	fp := sha256.Sum256([]byte("POST /pets\n" + body))
	oldBody := `{"id":77,"name":"Rex","categoryId":1,"status":"available"}`
	old := `{"status":201,"location":"/pets?id=77","etag":"\"1\"","body":` + oldBody + `}`
	err := pgtest.Connect(t, dbURL).Exec(context.Background(), fmt.Sprintf(`INSERT INTO idempotency_keys (scope, key, fingerprint, answer, created_at, expires_at)
		VALUES ('key:%x', 'old-1', '\x%x', convert_to('%s', 'UTF8'), now(), now() + interval '1 hour')`, scope[:12], fp, old))
	if err != nil {
		t.Fatal(err)
	}
	res := ts.keyed("POST", "/pets", body, "old-1").wantStatus(http.StatusCreated)
	if string(res.body) != oldBody+"\n" || res.header.Get("Location") != "/pets?id=77" || res.header.Get("ETag") != `"1"` || res.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replayed %s with %v, want the older version's answer %s", res.body, res.header, old)
	}
	if pets := ts.do("GET", "/pets", "").wantStatus(http.StatusOK); string(pets.body) != "[]\n" {
		t.Errorf("pets after the replay: %s, want none", pets.body)
	}
}
