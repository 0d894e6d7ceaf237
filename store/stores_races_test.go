package store_test

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"petstore/store"
)

// testOrderRace places 200 orders of one unit at once against a stock of
// 50: exactly 50 are placed, and the stock ends at 0.
func testOrderRace(t *testing.T, s store.Store) {
	rex, outcomes, left := ordersAtOnce(t, s, 50, 200, func(o *store.Order) error { return s.PlaceOrder(ctx, o, nil) })
	if want := map[string]int{"": 50, store.EINSUFFICIENTSTOCK: 150}; !maps.Equal(outcomes, want) || left != 0 {
		t.Errorf("outcomes %v, stock left %d; want %v, 0", outcomes, left, want)
	}
	orders, _ := must2(s.ListOrders(ctx, store.OrderFilter{PetID: rex.ID, Page: store.Page{Limit: store.MaxPageSize}}))(t)
	if len(orders) != 50 {
		t.Errorf("%d orders stored, want 50", len(orders))
	}
}

// ordersAtOnce gives a new pet stock, places n orders of one unit of it
// at once through place, and returns the pet, the orders' outcomes
// counted by error code ("" for placed) and the stock left.
func ordersAtOnce(t *testing.T, s store.Store, stock, n int, place func(*store.Order) error) (store.Pet, map[string]int, int) {
	t.Helper()
	dogs := newCategory(t, s, "dogs")
	rex := newPet(t, s, "Rex", dogs.ID, "")
	must(s.SetStock(ctx, rex.ID, stock, store.Condition{}))(t)
	outcomes := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			err := place(&store.Order{PetID: rex.ID, Quantity: 1})
			mu.Lock()
			defer mu.Unlock()
			outcomes[store.ErrorCode(err)]++
		})
	}
	close(start)
	wg.Wait()
	return rex, outcomes, must(s.InventoryItem(ctx, rex.ID))(t).Quantity
}

// testCreateRace creates 300 pets at once in two categories and a deleted
// one: each create gets its own pet back (the stored pet, its inventory
// entry and its event are what it sent), the ids differ, and a create in
// the deleted category is refused and leaves nothing.
func testCreateRace(t *testing.T, s store.Store) {
	dogs, cats, gone := newCategory(t, s, "dogs"), newCategory(t, s, "cats"), newCategory(t, s, "gone")
	check(t, s.DeleteCategory(ctx, gone.ID, store.Condition{}))
	_, before := eventsAfter(t, s, store.EventID{})
	statuses := []store.PetStatus{store.StatusAvailable, store.StatusPending, store.StatusSold}
	pets := make([]store.Pet, 300)
	errs := make([]error, len(pets))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range pets {
		pets[i] = store.Pet{Name: fmt.Sprintf("pet %d", i), CategoryID: []int64{dogs.ID, cats.ID, dogs.ID, cats.ID, gone.ID}[i%5], Status: statuses[i%3]}
		wg.Go(func() {
			<-start
			errs[i] = s.CreatePet(ctx, &pets[i], nil)
		})
	}
	close(start)
	wg.Wait()
	ids := map[int64]bool{}
	created := map[string]string{}
	for i, p := range pets {
		if p.CategoryID == gone.ID {
			wantError(t, "a create in a deleted category", errs[i], store.EUNPROCESSABLE, fmt.Sprintf("category %d does not exist", gone.ID))
			continue
		}
		if errs[i] != nil {
			t.Fatalf("create %d: %v", i, errs[i])
		}
		if ids[p.ID] || p.ID == 0 || p.Version != 1 {
			t.Fatalf("create %d answered %+v (an id seen before, or none)", i, p)
		}
		ids[p.ID] = true
		if got := must(s.Pet(ctx, p.ID))(t); got != p {
			t.Errorf("pet %d stored as %+v, created as %+v", p.ID, got, p)
		}
		if it := must(s.InventoryItem(ctx, p.ID))(t); it.Quantity != 0 || it.Status != p.Status {
			t.Errorf("pet %d's inventory entry: %+v", p.ID, it)
		}
		p.Version = 0 // events carry the pet as the API shows it
		created[jsonOf(t, p)] = ""
	}
	if len(ids) != 240 {
		t.Errorf("%d pets created, want 240", len(ids))
	}
	if inGone, _ := must2(s.ListPets(ctx, store.PetFilter{CategoryID: gone.ID}))(t); len(inGone) != 0 {
		t.Errorf("pets stored in the deleted category: %+v", inGone)
	}
	events, _ := eventsAfter(t, s, before)
	for _, e := range events {
		if _, ok := created[e.Data]; e.Type != store.EventPetCreated || !ok {
			t.Errorf("unexpected event %v", e)
		}
		delete(created, e.Data)
	}
	if len(events) != 240 || len(created) != 0 {
		t.Errorf("%d events, %d pets without theirs", len(events), len(created))
	}
}

// testDeleteCategoryRace deletes an empty category while pets are created
// in it and moved into it, at once, many times: the delete succeeds only
// when every such write fails (422), and otherwise is refused (409) with
// the category kept and holding exactly the pets whose writes succeeded.
func testDeleteCategoryRace(t *testing.T, s store.Store) {
	home := newCategory(t, s, "home")
	for round := range 20 {
		target := newCategory(t, s, fmt.Sprintf("target %d", round))
		movers := []store.Pet{newPet(t, s, "mover a", home.ID, ""), newPet(t, s, "mover b", home.ID, "")}
		var (
			wg        sync.WaitGroup
			mu        sync.Mutex
			placed    = map[int64]bool{}
			deleteErr error
		)
		write := func(p store.Pet, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				placed[p.ID] = true
			} else if store.ErrorCode(err) != store.EUNPROCESSABLE {
				t.Errorf("round %d: writing pet %+v: %v", round, p, err)
			}
		}
		var writes []func()
		for i := range 8 {
			writes = append(writes, func() {
				p := store.Pet{Name: fmt.Sprintf("new %d", i), CategoryID: target.ID}
				write(p, s.CreatePet(ctx, &p, nil))
			})
		}
		for _, m := range movers {
			writes = append(writes, func() {
				m.CategoryID = target.ID
				write(m, s.ReplacePet(ctx, &m, store.Condition{}))
			})
		}
		// The delete goes out at another place among the writes each round.
		writes = slices.Insert(writes, round%(len(writes)+1), func() {
			deleteErr = s.DeleteCategory(ctx, target.ID, store.Condition{})
		})
		start := make(chan struct{})
		for _, w := range writes {
			wg.Go(func() { <-start; w() })
		}
		close(start)
		wg.Wait()
		_, catErr := s.Category(ctx, target.ID)
		in, _ := must2(s.ListPets(ctx, store.PetFilter{CategoryID: target.ID, Page: store.Page{Limit: store.MaxPageSize}}))(t)
		stored := map[int64]bool{}
		for _, p := range in {
			stored[p.ID] = true
		}
		switch {
		case !maps.Equal(stored, placed):
			t.Fatalf("round %d: pets %v in the category, writes that succeeded %v", round, stored, placed)
		case deleteErr == nil && (len(placed) > 0 || catErr == nil):
			t.Fatalf("round %d: deleted, yet %d pets placed in it (category read: %v)", round, len(placed), catErr)
		case deleteErr != nil && (store.ErrorCode(deleteErr) != store.ECONFLICT || len(placed) == 0 || catErr != nil):
			t.Fatalf("round %d: delete refused with %v, %d pets placed, category read: %v", round, deleteErr, len(placed), catErr)
		}
	}
}

// testAPIKeyChecksTogether checks 300 secrets at once, valid, revoked and
// unknown: each check answers for its own secret.
func testAPIKeyChecksTogether(t *testing.T, s store.Store) {
	var keys []store.APIKey
	var secrets []string
	for i := range 4 {
		k, secret := must2(s.CreateAPIKey(ctx, fmt.Sprintf("key %d", i), nil))(t)
		keys, secrets = append(keys, k), append(secrets, secret)
	}
	check(t, s.RevokeAPIKey(ctx, keys[3].ID))
	secrets = append(secrets, store.APIKeyPrefix+"unknown")
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 300 {
		wg.Go(func() {
			<-start
			k, ok := s.AuthenticateAPIKey(secrets[i%5])
			if want := i%5 < 3; ok != want || (ok && k != keys[i%5]) {
				t.Errorf("secret %d: %+v, %v", i%5, k, ok)
			}
		})
	}
	close(start)
	wg.Wait()
}
