package boltstore_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"petstore/domains/domaintest"
	"petstore/store"
)

func TestSetStock(t *testing.T) {
	db := domaintest.OpenStore(t)
	p := mustDog(t, db, store.StatusPending)

	it, err := db.SetStock(ctx, p.ID, store.MaxStock)
	if err != nil || it != (store.InventoryItem{PetID: p.ID, Quantity: store.MaxStock, Status: store.StatusPending}) {
		t.Fatalf("SetStock: %+v, %v", it, err)
	}
	if got, err := db.InventoryItem(ctx, p.ID); err != nil || got != it {
		t.Fatalf("InventoryItem: %+v, %v; want %+v", got, err, it)
	}
	_, err = db.SetStock(ctx, p.ID, store.MaxStock+1)
	assertError(t, err, store.EINVALID, "quantity must be between 0 and 1000000, got 1000001")
	_, err = db.SetStock(ctx, p.ID, -1)
	assertError(t, err, store.EINVALID, "quantity must be between 0 and 1000000, got -1")
	_, err = db.SetStock(ctx, 42, 1)
	assertError(t, err, store.ENOTFOUND, "pet 42 not found")
	_, err = db.InventoryItem(ctx, 42)
	assertError(t, err, store.ENOTFOUND, "pet 42 not found")
	if got, _ := db.InventoryItem(ctx, p.ID); got.Quantity != store.MaxStock {
		t.Fatalf("stock %d after refused updates", got.Quantity)
	}
	if it, err := db.SetStock(ctx, p.ID, 0); err != nil || it.Quantity != 0 {
		t.Fatalf("SetStock 0: %+v, %v", it, err)
	}
}

func TestListInventory(t *testing.T) {
	db := domaintest.OpenStore(t)
	c := mustCategory(t, db, "dogs")
	statuses := []store.PetStatus{store.StatusAvailable, store.StatusPending, store.StatusSold}
	want := map[int64]store.InventoryItem{}
	for i := range 30 {
		p := mustPet(t, db, "p", c.ID, statuses[i%3])
		mustStock(t, db, p.ID, i)
		want[p.ID] = store.InventoryItem{PetID: p.ID, Quantity: i, Status: p.Status}
	}
	check := func(t *testing.T) {
		t.Helper()
		for _, s := range append([]store.PetStatus{""}, statuses...) {
			var exp []store.InventoryItem
			for _, it := range want {
				if s == "" || it.Status == s {
					exp = append(exp, it)
				}
			}
			slices.SortFunc(exp, func(a, b store.InventoryItem) int { return int(a.PetID - b.PetID) })
			var got []store.InventoryItem
			f := store.InventoryFilter{Status: s, Page: store.Page{Limit: 4}}
			for {
				page, next, err := db.ListInventory(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, page...)
				if next == 0 {
					break
				}
				f.After = next
			}
			if !slices.Equal(got, exp) {
				t.Fatalf("status %q: got %v, want %v", s, got, exp)
			}
		}
	}
	check(t)
	for id, it := range want {
		switch id % 3 {
		case 0:
			p, _ := db.Pet(ctx, id)
			p.Status = store.StatusSold
			if err := db.ReplacePet(ctx, &p); err != nil {
				t.Fatal(err)
			}
			it.Status = store.StatusSold
			want[id] = it
		case 1:
			if err := db.DeletePet(ctx, id); err != nil {
				t.Fatal(err)
			}
			delete(want, id)
		}
	}
	check(t)
	_, _, err := db.ListInventory(ctx, store.InventoryFilter{Status: "gone"})
	assertError(t, err, store.EINVALID, fmt.Sprintf("status %q is not one of available, pending, sold", "gone"))
}

// TestStockUnderRacingOrdersCancellationsAndRestocks races order placement,
// cancellation and stock replacement on one pet. A restock replaces the
// stock, so "nothing lost" cannot hold across one; what must hold: the
// stock never leaves 0..MaxStock, each placed order took what it asked
// for from a stock that had it, and once the restocks stop, orders and
// cancellations move the stock by exactly their quantities.
func TestStockUnderRacingOrdersCancellationsAndRestocks(t *testing.T) {
	db := domaintest.OpenStore(t)
	p := mustStockedDog(t, db, store.StatusAvailable, 40)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		placed []store.Order
		stop   = make(chan struct{})
	)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 60 {
				o := store.Order{PetID: p.ID, Quantity: 1 + (w+i)%3}
				err := db.PlaceOrder(ctx, &o)
				switch store.ErrorCode(err) {
				case "":
					mu.Lock()
					placed = append(placed, o)
					mu.Unlock()
				case store.EINSUFFICIENTSTOCK:
				default:
					t.Errorf("PlaceOrder: %v", err)
					return
				}
			}
		}()
	}
	for range 2 { // cancellers
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 60 {
				mu.Lock()
				var o store.Order
				if n := len(placed); n > 0 {
					o, placed = placed[n-1], placed[:n-1]
				}
				mu.Unlock()
				if o.ID != 0 {
					if err := db.CancelOrder(ctx, o.ID); err != nil {
						t.Errorf("CancelOrder %d: %v", o.ID, err)
					}
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // restocker
		defer wg.Done()
		for i := range 20 {
			if _, err := db.SetStock(ctx, p.ID, 10*(i%5)); err != nil {
				t.Errorf("SetStock: %v", err)
			}
		}
	}()
	watched := make(chan error, 1)
	go func() { // the stock is never out of range
		for {
			select {
			case <-stop:
				watched <- nil
				return
			default:
			}
			it, err := db.InventoryItem(ctx, p.ID)
			if err == nil && (it.Quantity < 0 || it.Quantity > store.MaxStock) {
				watched <- fmt.Errorf("stock %d out of range", it.Quantity)
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	if err := <-watched; err != nil {
		t.Fatal(err)
	}

	// Without restocks, orders and cancellations balance to the unit.
	before, _ := db.InventoryItem(ctx, p.ID)
	if _, err := db.SetStock(ctx, p.ID, before.Quantity+30); err != nil {
		t.Fatal(err)
	}
	start := before.Quantity + 30
	taken := 0
	for range 10 {
		o := mustOrder(t, db, store.Order{PetID: p.ID, Quantity: 2})
		taken += 2
		if o.ID%2 == 0 {
			if err := db.CancelOrder(ctx, o.ID); err != nil {
				t.Fatal(err)
			}
			taken -= 2
		}
	}
	if it, _ := db.InventoryItem(ctx, p.ID); it.Quantity != start-taken {
		t.Fatalf("stock %d, want %d - %d", it.Quantity, start, taken)
	}
}
