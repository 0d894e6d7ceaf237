package store_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"testing"
	"time"

	"petstore/store"
	"petstore/store/storetest"
)

// keyed is a write made with scope's key for the request fingerprint.
func keyed(scope, key, fingerprint string, ttl time.Duration) *store.IdempotentWrite {
	return &store.IdempotentWrite{Scope: scope, Key: key, Fingerprint: []byte(fingerprint), TTL: ttl}
}

// keptJSON is what a store keeps for a write of record, with beside.
func keptJSON(record, beside any) string {
	b, _ := json.Marshal(store.Kept[any, any]{Record: record, Beside: beside})
	return string(b)
}

// kept reads the answer kept for scope's key, opened as a retry with the
// request fingerprint would open it.
func kept(s store.Store, scope, key, fingerprint string) (store.KeptAnswer, error) {
	w := keyed(scope, key, fingerprint, time.Hour)
	k, err := s.KeptAnswer(ctx, w)
	if err != nil {
		return k, err
	}
	return w.Replay(k)
}

// testKeptAnswers: a write made with an Idempotency-Key keeps its answer
// with the change; the same key and request again is a replay that writes
// nothing, another request with the key is refused, a write that fails
// keeps nothing, and expired answers are forgotten.
func testKeptAnswers(t *testing.T, s store.Store) {
	// A pet: kept with its id and version.
	dogs := newCategory(t, s, "dogs")
	rex := store.Pet{Name: "Rex", CategoryID: dogs.ID}
	check(t, s.CreatePet(ctx, &rex, keyed("key:1", "k1", "fp-rex", time.Hour)))
	want := keptJSON(&rex, nil)
	k := must(kept(s, "key:1", "k1", "fp-rex"))(t)
	if string(k.Answer) != want || string(k.Fingerprint) != "fp-rex" {
		t.Errorf("kept %q for %q, want %q for fp-rex", k.Answer, k.Fingerprint, want)
	}
	if d := k.ExpiresAt.Sub(k.CreatedAt); d < time.Hour-time.Millisecond || d > time.Hour+time.Millisecond {
		t.Errorf("kept from %v to %v, want an hour", k.CreatedAt, k.ExpiresAt)
	}

	// The same request again: its answer, nothing written.
	again := keyed("key:1", "k1", "fp-rex", time.Hour)
	p := store.Pet{Name: "Rex", CategoryID: dogs.ID}
	if err := s.CreatePet(ctx, &p, again); err != store.ErrReplay {
		t.Fatalf("the same request again: %v, want ErrReplay", err)
	}
	if string(again.Kept.Answer) != want || p.ID != 0 {
		t.Errorf("replayed %q (pet id %d), want %q and no pet", again.Kept.Answer, p.ID, want)
	}
	// Another request with the key: refused, nothing written.
	err := s.CreatePet(ctx, &store.Pet{Name: "Max", CategoryID: dogs.ID}, keyed("key:1", "k1", "fp-other", time.Hour))
	wantError(t, "another request with a used key", err, store.EIDEMPOTENCYREUSED,
		`Idempotency-Key "k1" was first used with another request (method, path or body); send a new request with a new key`)
	// The same key of another credential is another key.
	max := store.Pet{Name: "Max", CategoryID: dogs.ID}
	check(t, s.CreatePet(ctx, &max, keyed("key:2", "k1", "fp-max", time.Hour)))
	pets, _ := must2(s.ListPets(ctx, store.PetFilter{CategoryID: dogs.ID}))(t)
	if len(pets) != 2 {
		t.Errorf("%d pets stored, want 2 (Rex once, Max)", len(pets))
	}
	_, err = kept(s, "key:3", "k1", "fp-rex")
	wantError(t, "an unknown key", err, store.ENOTFOUND, `no answer is kept for Idempotency-Key "k1"`)

	// A category.
	cats := store.Category{Name: "cats"}
	check(t, s.CreateCategory(ctx, &cats, keyed("key:1", "k2", "fp-cats", time.Hour)))
	if err := s.CreateCategory(ctx, &store.Category{Name: "cats"}, keyed("key:1", "k2", "fp-cats", time.Hour)); err != store.ErrReplay {
		t.Errorf("a category again: %v, want ErrReplay", err)
	}
	if k := must(kept(s, "key:1", "k2", "fp-cats"))(t); string(k.Answer) != keptJSON(&cats, nil) {
		t.Errorf("kept %q for the category", k.Answer)
	}

	// An order takes the stock once; a refused one keeps nothing.
	must(s.SetStock(ctx, rex.ID, 3, store.Condition{}))(t)
	o := store.Order{PetID: rex.ID, Quantity: 2}
	check(t, s.PlaceOrder(ctx, &o, keyed("key:1", "k3", "fp-order", time.Hour)))
	if err := s.PlaceOrder(ctx, &store.Order{PetID: rex.ID, Quantity: 2}, keyed("key:1", "k3", "fp-order", time.Hour)); err != store.ErrReplay {
		t.Errorf("an order again: %v, want ErrReplay", err)
	}
	err = s.PlaceOrder(ctx, &store.Order{PetID: rex.ID, Quantity: 2}, keyed("key:1", "k4", "fp-big", time.Hour))
	if store.ErrorCode(err) != store.EINSUFFICIENTSTOCK {
		t.Errorf("an order beyond the stock: %v", err)
	}
	_, err = kept(s, "key:1", "k4", "fp-big")
	wantError(t, "the key of a refused write", err, store.ENOTFOUND, `no answer is kept for Idempotency-Key "k4"`)
	if it := must(s.InventoryItem(ctx, rex.ID))(t); it.Quantity != 1 {
		t.Errorf("stock %d, want 1: the order was taken once", it.Quantity)
	}
	// The refused key is free: with stock, it places its order.
	check(t, s.PlaceOrder(ctx, &store.Order{PetID: rex.ID, Quantity: 1}, keyed("key:1", "k4", "fp-small", time.Hour)))

	// An expired answer is forgotten: the key may be used again, for
	// another request too.
	old := store.Pet{Name: "Old", CategoryID: dogs.ID}
	check(t, s.CreatePet(ctx, &old, keyed("key:1", "old", "fp-old", -time.Hour)))
	_, err = kept(s, "key:1", "old", "fp-old")
	wantError(t, "an expired key", err, store.ENOTFOUND, `no answer is kept for Idempotency-Key "old"`)
	fresh := store.Pet{Name: "Fresh", CategoryID: dogs.ID}
	check(t, s.CreatePet(ctx, &fresh, keyed("key:1", "old", "fp-fresh", time.Hour)))
	if k := must(kept(s, "key:1", "old", "fp-fresh"))(t); string(k.Answer) != keptJSON(&fresh, nil) {
		t.Errorf("kept %q after the expired one", k.Answer)
	}
}

// testSweepKeptAnswers: the sweep forgets expired answers, then the oldest
// beyond the bound.
func testSweepKeptAnswers(t *testing.T, s store.Store) {
	dogs := newCategory(t, s, "dogs")
	add := func(key string, ttl time.Duration) {
		t.Helper()
		check(t, s.CreatePet(ctx, &store.Pet{Name: key, CategoryID: dogs.ID}, keyed("key:1", key, "fp", ttl)))
	}
	add("expired-1", -time.Hour)
	add("expired-2", -time.Minute)
	add("live-1", time.Hour)
	add("live-2", 2*time.Hour)
	add("live-3", 3*time.Hour)
	if n := must(s.SweepKeptAnswers(ctx, 0))(t); n != 2 {
		t.Errorf("the sweep forgot %d answers, want the 2 expired", n)
	}
	if n := must(s.SweepKeptAnswers(ctx, 10))(t); n != 0 {
		t.Errorf("a sweep within the bound forgot %d answers", n)
	}
	if n := must(s.SweepKeptAnswers(ctx, 1))(t); n != 2 {
		t.Errorf("a sweep to a bound of 1 forgot %d answers, want 2", n)
	}
	for key, live := range map[string]bool{"live-1": false, "live-2": false, "live-3": true} {
		if _, err := kept(s, "key:1", key, "fp"); (err == nil) != live {
			t.Errorf("%s: %v, kept should be %v", key, err, live)
		}
	}
}

// testKeyRace: many writes with one key at once place one order; the
// others replay it.
func testKeyRace(t *testing.T, s store.Store) {
	_, outcomes, left := ordersAtOnce(t, s, 100, 50, func(o *store.Order) error {
		return s.PlaceOrder(ctx, o, keyed("key:1", "once", "fp", time.Hour))
	})
	if want := map[string]int{"": 1, store.ErrReplay.Code: 49}; !maps.Equal(outcomes, want) || left != 99 {
		t.Errorf("outcomes %v, stock left %d; want %v, 99", outcomes, left, want)
	}
}

// testKeptAdminAnswers: the admin writes that serve a POST keep their
// answer with their change, as creates do: retried with the key, each is
// ErrReplay with the first answer and writes nothing. The answer of a new
// API key holds its secret, and the store keeps it sealed.
func testKeptAdminAnswers(t *testing.T, s store.Store) {
	replayed := func(what string, err error, w *store.IdempotentWrite, record, beside any) {
		t.Helper()
		if err != store.ErrReplay {
			t.Fatalf("%s again: %v, want ErrReplay", what, err)
		}
		if want := keptJSON(record, beside); string(w.Kept.Answer) != want {
			t.Errorf("%s again: replayed %s, want %s", what, w.Kept.Answer, want)
		}
	}

	// An API key: one, and its secret in the replay.
	first := storetest.AdminKeyed("key", "fp-key")
	k, secret := must2(s.CreateAPIKey(ctx, "bot", first))(t)
	again := storetest.AdminKeyed("key", "fp-key")
	_, _, err := s.CreateAPIKey(ctx, "bot", again)
	replayed("an API key", err, again, k, secret)
	if keys, _ := must2(s.APIKeys(ctx, store.Page{}))(t); len(keys) != 1 {
		t.Errorf("%d API keys, want 1", len(keys))
	}
	if got, ok := s.AuthenticateAPIKey(secret); !ok || got.ID != k.ID {
		t.Errorf("the replayed secret does not authenticate key %d", k.ID)
	}
	_, _, err = s.CreateAPIKey(ctx, "bot", storetest.AdminKeyed("key", "fp-other"))
	if store.ErrorCode(err) != store.EIDEMPOTENCYREUSED {
		t.Errorf("another request with the key: %v", err)
	}
	// As stored: sealed, the secret nowhere in it.
	kept := must(s.KeptAnswer(ctx, first))(t)
	if bytes.Contains(kept.Answer, []byte(secret)) || bytes.Contains(kept.Answer, []byte("bot")) {
		t.Errorf("the kept answer is stored in clear: %q", kept.Answer)
	}
	if open := must(first.Replay(kept))(t); !bytes.Contains(open.Answer, []byte(secret)) {
		t.Errorf("the kept answer opens to %s", open.Answer)
	}
	// Under another scope the key is another key.
	other := storetest.AdminKeyed("key", "fp-key")
	other.Scope = "admin:2"
	_, err = s.KeptAnswer(ctx, other)
	wantError(t, "the key of another scope", err, store.ENOTFOUND, `no answer is kept for Idempotency-Key "key"`)

	// A webhook, its secret's rotation and its test event: once each.
	hook := store.Webhook{URL: "http://hook.example/", Events: []string{"pet.created"}, Enabled: true, Secret: "whsec_first"}
	check(t, s.CreateWebhook(ctx, &hook, storetest.AdminKeyed("hook", "fp-hook")))
	again = storetest.AdminKeyed("hook", "fp-hook")
	replayed("a webhook", s.CreateWebhook(ctx, &store.Webhook{URL: "http://hook.example/", Events: []string{"pet.created"}, Enabled: true, Secret: "whsec_other"}, again), again, hook, nil)
	if hooks, _ := must2(s.Webhooks(ctx, store.Page{}))(t); len(hooks) != 1 {
		t.Errorf("%d webhooks, want 1", len(hooks))
	}
	rotate := func(secret string) func(*store.Webhook) error {
		return func(w *store.Webhook) error { w.Secret = secret; return nil }
	}
	rotated := must(s.UpdateWebhook(ctx, hook.ID, rotate("whsec_second"), storetest.AdminKeyed("rotate", "fp-rotate")))(t)
	again = storetest.AdminKeyed("rotate", "fp-rotate")
	_, err = s.UpdateWebhook(ctx, hook.ID, rotate("whsec_third"), again)
	replayed("a rotation", err, again, rotated, nil)
	if w := must(s.Webhook(ctx, hook.ID))(t); w.Secret != "whsec_second" {
		t.Errorf("secret %q after a rotation retried, want whsec_second", w.Secret)
	}
	testEvent := store.PendingEvent{Type: store.EventWebhookTest, Data: json.RawMessage(`{}`)}
	ev := must(s.RecordEvent(ctx, testEvent, hook.ID, storetest.AdminKeyed("test", "fp-test")))(t)
	again = storetest.AdminKeyed("test", "fp-test")
	_, err = s.RecordEvent(ctx, testEvent, hook.ID, again)
	replayed("a test event", err, again, ev, nil)

	// A retry of its delivery: one more.
	fanOut(t, s, time.Now().UTC(), 2)
	ds, _ := must2(s.Deliveries(ctx, hook.ID, store.Page{}))(t)
	if len(ds) != 1 {
		t.Fatalf("%d deliveries of the test event, want 1", len(ds))
	}
	retry := must(s.RetryDelivery(ctx, hook.ID, ds[0].ID, time.Now().UTC(), storetest.AdminKeyed("retry", "fp-retry")))(t)
	again = storetest.AdminKeyed("retry", "fp-retry")
	_, err = s.RetryDelivery(ctx, hook.ID, ds[0].ID, time.Now().UTC(), again)
	replayed("a delivery's retry", err, again, retry, retry.EventID)
	if ds, _ := must2(s.Deliveries(ctx, hook.ID, store.Page{}))(t); len(ds) != 2 {
		t.Errorf("%d deliveries after a retry retried, want 2", len(ds))
	}

	// A domain: the replay, not domain_exists.
	d := store.Domain{Name: "shop.example", State: store.DomainPending, AddedAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	check(t, s.AddDomain(ctx, &d, storetest.AdminKeyed("domain", "fp-domain")))
	again = storetest.AdminKeyed("domain", "fp-domain")
	replayed("a domain", s.AddDomain(ctx, &store.Domain{Name: "shop.example", AddedAt: d.AddedAt}, again), again, d, nil)

	// An answer kept on its own; without a key, nothing is written.
	verified := map[string]string{"name": "shop.example", "state": "verified"}
	check(t, s.KeepAnswer(ctx, storetest.AdminKeyed("verify", "fp-verify"), verified, []string{"a step"}))
	again = storetest.AdminKeyed("verify", "fp-verify")
	replayed("a kept answer", s.KeepAnswer(ctx, again, map[string]string{"other": "answer"}, nil), again, verified, []string{"a step"})
	check(t, s.KeepAnswer(ctx, nil, verified, nil))
}

// testKeptRecords: what a store keeps for a key is the record its write
// returned, and beside it what the record's JSON leaves out, and decodes
// back to them: a replay renders the answer the first request got. (The
// admin writes' are compared as JSON in testKeptAdminAnswers.)
func testKeptRecords(t *testing.T, s store.Store) {
	cat := store.Category{Name: "dogs", Description: "barks"}
	check(t, s.CreateCategory(ctx, &cat, storetest.AdminKeyed("category", "fp")))
	p := store.Pet{Name: "Rex", CategoryID: cat.ID}
	check(t, s.CreatePet(ctx, &p, storetest.AdminKeyed("pet", "fp")))
	must(s.SetStock(ctx, p.ID, 2, store.Condition{}))(t)
	ship := time.Date(2031, 5, 6, 7, 8, 9, 10, time.UTC)
	o := store.Order{PetID: p.ID, Quantity: 2, ShipDate: &ship}
	check(t, s.PlaceOrder(ctx, &o, storetest.AdminKeyed("order", "fp")))
	k, secret := must2(s.CreateAPIKey(ctx, "bot", storetest.AdminKeyed("apikey", "fp")))(t)
	d := store.Domain{Name: "shop.example", State: store.DomainPending, AddedAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), NextCheckAt: &ship}
	check(t, s.AddDomain(ctx, &d, storetest.AdminKeyed("domain", "fp")))
	cat.Version, p.Version, o.Version = 0, 0, 0 // left out of the JSON: a new record's is 1
	keptAs(t, s, "category", cat, any(nil))
	keptAs(t, s, "pet", p, any(nil))
	keptAs(t, s, "order", o, any(nil))
	keptAs(t, s, "apikey", k, secret)
	keptAs(t, s, "domain", d, any(nil))
}

// keptAs fails unless the answer kept for the admin key decodes to record
// and beside.
func keptAs[R, B any](t *testing.T, s store.Store, key string, record R, beside B) {
	t.Helper()
	w := storetest.AdminKeyed(key, "fp")
	k := must(w.Replay(must(s.KeptAnswer(ctx, w))(t)))(t)
	var got store.Kept[R, B]
	if err := json.Unmarshal(k.Answer, &got); err != nil || !reflect.DeepEqual(got, store.Kept[R, B]{Record: record, Beside: beside}) {
		t.Errorf("%s: kept %s (%v), decoded %+v; want %+v beside %+v", key, k.Answer, err, got, record, beside)
	}
}

// testAnswersKeptByAnOlderVersion: an answer an older version kept, the
// whole HTTP answer, is replayed as it was kept.
func testAnswersKeptByAnOlderVersion(t *testing.T, s store.Store) {
	old := []byte(`{"status":201,"location":"/pets?id=7","etag":"\"1\"","body":{"id":7,"name":"Rex","categoryId":1,"status":"available"}}`)
	now := time.Now().UTC().Truncate(time.Microsecond)
	check(t, s.(store.Importer).Import(ctx, &storetest.Snapshot{Answers: []store.StoredAnswer{{Scope: "key:1", Key: "old",
		KeptAnswer: store.KeptAnswer{Fingerprint: []byte("fp-old"), Answer: old, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}}}}))
	dogs := newCategory(t, s, "dogs")
	w := keyed("key:1", "old", "fp-old", time.Hour)
	if err := s.CreatePet(ctx, &store.Pet{Name: "Rex", CategoryID: dogs.ID}, w); err != store.ErrReplay || string(w.Kept.Answer) != string(old) {
		t.Errorf("the key of an older version's answer: %v, replayed %s; want ErrReplay and %s", err, w.Kept.Answer, old)
	}
	if pets, _ := must2(s.ListPets(ctx, store.PetFilter{}))(t); len(pets) != 0 {
		t.Errorf("%d pets created by a replay", len(pets))
	}
}
