package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"petstore/store"
)

// keyed is a write made with scope's key for the request fingerprint; its
// answer names the record it stored.
func keyed(scope, key, fingerprint string, ttl time.Duration) *store.IdempotentWrite {
	return &store.IdempotentWrite{
		Scope: scope, Key: key, Fingerprint: []byte(fingerprint), TTL: ttl,
		Answer: func(record any) ([]byte, error) {
			switch r := record.(type) {
			case *store.Pet:
				return fmt.Appendf(nil, "pet %d v%d %s", r.ID, r.Version, r.Name), nil
			case *store.Category:
				return fmt.Appendf(nil, "category %d v%d", r.ID, r.Version), nil
			case *store.Order:
				return fmt.Appendf(nil, "order %d v%d", r.ID, r.Version), nil
			}
			return nil, fmt.Errorf("an answer for %T", record)
		},
	}
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
	with := func(w *store.IdempotentWrite) context.Context { return store.WithIdempotency(ctx, w) }

	// A pet: kept with its id and version.
	dogs := newCategory(t, s, "dogs")
	rex := store.Pet{Name: "Rex", CategoryID: dogs.ID}
	check(t, s.CreatePet(with(keyed("key:1", "k1", "fp-rex", time.Hour)), &rex))
	want := fmt.Sprintf("pet %d v1 Rex", rex.ID)
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
	if err := s.CreatePet(with(again), &p); err != store.ErrReplay {
		t.Fatalf("the same request again: %v, want ErrReplay", err)
	}
	if string(again.Kept.Answer) != want || p.ID != 0 {
		t.Errorf("replayed %q (pet id %d), want %q and no pet", again.Kept.Answer, p.ID, want)
	}
	// Another request with the key: refused, nothing written.
	err := s.CreatePet(with(keyed("key:1", "k1", "fp-other", time.Hour)), &store.Pet{Name: "Max", CategoryID: dogs.ID})
	wantError(t, "another request with a used key", err, store.EIDEMPOTENCYREUSED,
		`Idempotency-Key "k1" was first used with another request (method, path or body); send a new request with a new key`)
	// The same key of another credential is another key.
	max := store.Pet{Name: "Max", CategoryID: dogs.ID}
	check(t, s.CreatePet(with(keyed("key:2", "k1", "fp-max", time.Hour)), &max))
	pets, _ := must2(s.ListPets(ctx, store.PetFilter{CategoryID: dogs.ID}))(t)
	if len(pets) != 2 {
		t.Errorf("%d pets stored, want 2 (Rex once, Max)", len(pets))
	}
	_, err = kept(s, "key:3", "k1", "fp-rex")
	wantError(t, "an unknown key", err, store.ENOTFOUND, `no answer is kept for Idempotency-Key "k1"`)

	// A category.
	cats := store.Category{Name: "cats"}
	check(t, s.CreateCategory(with(keyed("key:1", "k2", "fp-cats", time.Hour)), &cats))
	if err := s.CreateCategory(with(keyed("key:1", "k2", "fp-cats", time.Hour)), &store.Category{Name: "cats"}); err != store.ErrReplay {
		t.Errorf("a category again: %v, want ErrReplay", err)
	}
	if k := must(kept(s, "key:1", "k2", "fp-cats"))(t); string(k.Answer) != fmt.Sprintf("category %d v1", cats.ID) {
		t.Errorf("kept %q for the category", k.Answer)
	}

	// An order takes the stock once; a refused one keeps nothing.
	must(s.SetStock(ctx, rex.ID, 3))(t)
	o := store.Order{PetID: rex.ID, Quantity: 2}
	check(t, s.PlaceOrder(with(keyed("key:1", "k3", "fp-order", time.Hour)), &o))
	if err := s.PlaceOrder(with(keyed("key:1", "k3", "fp-order", time.Hour)), &store.Order{PetID: rex.ID, Quantity: 2}); err != store.ErrReplay {
		t.Errorf("an order again: %v, want ErrReplay", err)
	}
	err = s.PlaceOrder(with(keyed("key:1", "k4", "fp-big", time.Hour)), &store.Order{PetID: rex.ID, Quantity: 2})
	if store.ErrorCode(err) != store.EINSUFFICIENTSTOCK {
		t.Errorf("an order beyond the stock: %v", err)
	}
	_, err = kept(s, "key:1", "k4", "fp-big")
	wantError(t, "the key of a refused write", err, store.ENOTFOUND, `no answer is kept for Idempotency-Key "k4"`)
	if it := must(s.InventoryItem(ctx, rex.ID))(t); it.Quantity != 1 {
		t.Errorf("stock %d, want 1: the order was taken once", it.Quantity)
	}
	// The refused key is free: with stock, it places its order.
	check(t, s.PlaceOrder(with(keyed("key:1", "k4", "fp-small", time.Hour)), &store.Order{PetID: rex.ID, Quantity: 1}))

	// An expired answer is forgotten: the key may be used again, for
	// another request too.
	old := store.Pet{Name: "Old", CategoryID: dogs.ID}
	check(t, s.CreatePet(with(keyed("key:1", "old", "fp-old", -time.Hour)), &old))
	_, err = kept(s, "key:1", "old", "fp-old")
	wantError(t, "an expired key", err, store.ENOTFOUND, `no answer is kept for Idempotency-Key "old"`)
	fresh := store.Pet{Name: "Fresh", CategoryID: dogs.ID}
	check(t, s.CreatePet(with(keyed("key:1", "old", "fp-fresh", time.Hour)), &fresh))
	if k := must(kept(s, "key:1", "old", "fp-fresh"))(t); string(k.Answer) != fmt.Sprintf("pet %d v1 Fresh", fresh.ID) {
		t.Errorf("kept %q after the expired one", k.Answer)
	}
}

// testSweepKeptAnswers: the sweep forgets expired answers, then the oldest
// beyond the bound.
func testSweepKeptAnswers(t *testing.T, s store.Store) {
	dogs := newCategory(t, s, "dogs")
	add := func(key string, ttl time.Duration) {
		t.Helper()
		check(t, s.CreatePet(store.WithIdempotency(ctx, keyed("key:1", key, "fp", ttl)), &store.Pet{Name: key, CategoryID: dogs.ID}))
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
	dogs := newCategory(t, s, "dogs")
	rex := newPet(t, s, "Rex", dogs.ID, "")
	must(s.SetStock(ctx, rex.ID, 100))(t)
	var placed, replayed int
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 50 {
		wg.Go(func() {
			<-start
			w := keyed("key:1", "once", "fp", time.Hour)
			err := s.PlaceOrder(store.WithIdempotency(ctx, w), &store.Order{PetID: rex.ID, Quantity: 1})
			mu.Lock()
			defer mu.Unlock()
			switch err {
			case nil:
				placed++
			case store.ErrReplay:
				replayed++
			default:
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	it := must(s.InventoryItem(ctx, rex.ID))(t)
	if placed != 1 || replayed != 49 || it.Quantity != 99 {
		t.Errorf("placed %d, replayed %d, stock left %d; want 1, 49, 99", placed, replayed, it.Quantity)
	}
}
