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
	"petstore/store"
	"petstore/store/postgres/pgtest"
)

// adminKeyed sends an admin request with the admin token and an
// Idempotency-Key.
func (ts *testServer) adminKeyed(method, path, body, key string) *response {
	ts.tb.Helper()
	return ts.send(method, path, body, http.Header{"Authorization": {"Bearer " + ts.admin}, "Idempotency-Key": {key}})
}

// storedKey is what a store keeps in place of an Idempotency-Key.
func storedKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
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
			stored:  func(t *testing.T, key string) bool { return bytes.Contains(file(t), []byte(storedKey(key))) },
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
				return count(t, fmt.Sprintf(`SELECT count(*) FROM idempotency_keys WHERE key = '%s' AND answer IS NOT NULL`, storedKey(key))) == 1
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
	// authenticates.
	first := ts.adminKeyed("POST", "/admin/api-keys", `{"name":"deploy-bot"}`, kKey).wantStatus(201)
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
	rcv := newHookReceiver(t)
	hookBody := `{"url":"` + rcv.srv.URL + `","events":["pet.created"]}`
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
	rcv.setSecret(rw.Secret)

	// One test event, however often it is retried.
	test := ts.adminKeyed("POST", path+"/test", "", kTest).wantStatus(202)
	ts.adminKeyed("POST", path+"/test", "", kTest).wantReplayOf(test)
	var ev sentEvent
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
	if got := rcv.events(); len(got) != 1 || got[0].ID != ev.ID {
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

	// What the store holds: every answer, under a hash of its key, and
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
	const n = 50
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
			results[i] = ts.adminKeyed("POST", "/admin/api-keys", `{"name":"race"}`, "one")
		})
	}
	close(start)
	wg.Wait()
	var first *response
	replays := 0
	for _, r := range results {
		switch {
		case r.status == 201 && r.header.Get("Idempotent-Replayed") == "":
			if first != nil {
				t.Fatalf("two keys created: %s and %s", first.body, r.body)
			}
			first = r
		case r.status == 201:
			replays++
		case r.status == 409 && r.header.Get("Retry-After") != "" && strings.Contains(string(r.body), store.EIDEMPOTENCYBUSY):
		default:
			t.Fatalf("unexpected answer %d %v %s", r.status, r.header, r.body)
		}
	}
	if first == nil {
		t.Fatal("no key created")
	}
	for _, r := range results {
		if r.status == 201 && !bytes.Equal(r.body, first.body) {
			t.Errorf("an answer %s differs from the creation's %s", r.body, first.body)
		}
	}
	var keys []store.APIKey
	a.adminDo("GET", "/admin/api-keys?limit=100", "").wantStatus(200).decode(&keys)
	if c := len(slices.DeleteFunc(keys, func(k store.APIKey) bool { return k.Name != "race" })); c != 1 {
		t.Errorf("%d keys named race, want 1", c)
	}
	t.Logf("1 key created, %d replays, %d answered 409", replays, n-1-replays)
	a.adminKeyed("POST", "/admin/api-keys", `{"name":"race"}`, "one").wantReplayOf(first)
	b.adminKeyed("POST", "/admin/api-keys", `{"name":"race"}`, "one").wantReplayOf(first)
}
