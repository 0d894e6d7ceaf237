package boltstore_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/storetest"
)

func TestPlaceOrder(t *testing.T) {
	db := domaintest.OpenStore(t)
	p := mustStockedDog(t, db, "", 3)

	ship := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	o := mustOrder(t, db, store.Order{ID: 77, PetID: p.ID, ShipDate: &ship})
	if o.ID != 1 || o.Quantity != 1 || o.Complete {
		t.Fatalf("placed %+v: want id 1 (client id ignored), quantity defaulted to 1", o)
	}
	got, err := db.Order(ctx, o.ID)
	if err != nil || got.ID != o.ID || got.PetID != p.ID || got.Quantity != 1 || got.ShipDate == nil || !got.ShipDate.Equal(ship) {
		t.Fatalf("Order: %+v, %v; want %+v", got, err, o)
	}
	if it, _ := db.InventoryItem(ctx, p.ID); it.Quantity != 2 {
		t.Fatalf("stock %d after ordering 1 of 3", it.Quantity)
	}
	_, err = db.Order(ctx, 5)
	assertError(t, err, store.ENOTFOUND, "order 5 not found")
}

func TestPlaceOrder_Errors(t *testing.T) {
	db := domaintest.OpenStore(t)
	c := mustCategory(t, db, "dogs")
	p := mustPet(t, db, "Rex", c.ID, "")
	sold := mustPet(t, db, "Old", c.ID, store.StatusSold)
	mustStock(t, db, p.ID, 3)
	mustStock(t, db, sold.ID, 3)

	for _, tc := range []struct {
		order     store.Order
		code, msg string
	}{
		{store.Order{Quantity: 1}, store.EINVALID, "petId is required"},
		{store.Order{PetID: -1}, store.EINVALID, "petId is required"},
		{store.Order{PetID: p.ID, Quantity: -1}, store.EINVALID, "quantity must be between 1 and 10000, got -1"},
		{store.Order{PetID: p.ID, Quantity: 10001}, store.EINVALID, "quantity must be between 1 and 10000, got 10001"},
		{store.Order{PetID: 9}, store.EUNPROCESSABLE, "pet 9 does not exist"},
		{store.Order{PetID: sold.ID}, store.ECONFLICT, fmt.Sprintf("pet %d is sold", sold.ID)},
		{store.Order{PetID: p.ID, Quantity: 5}, store.EINSUFFICIENTSTOCK, fmt.Sprintf("pet %d has 3 in stock, the order asks for 5", p.ID)},
	} {
		o := tc.order
		assertError(t, db.PlaceOrder(ctx, &o, nil), tc.code, tc.msg)
		if o != tc.order {
			t.Fatalf("a failed PlaceOrder changed its argument: %+v", o)
		}
	}
	if it, _ := db.InventoryItem(ctx, p.ID); it.Quantity != 3 {
		t.Fatalf("stock %d after failed orders, want 3", it.Quantity)
	}
	if orders, _, err := db.ListOrders(ctx, store.OrderFilter{}); err != nil || len(orders) != 0 {
		t.Fatalf("orders after failed placements: %+v, %v", orders, err)
	}
	// The whole stock can be ordered at once.
	if err := db.PlaceOrder(ctx, &store.Order{PetID: p.ID, Quantity: 3}, nil); err != nil {
		t.Fatal(err)
	}
	assertError(t, db.PlaceOrder(ctx, &store.Order{PetID: p.ID}, nil), store.EINSUFFICIENTSTOCK,
		fmt.Sprintf("pet %d has 0 in stock, the order asks for 1", p.ID))
}

func TestCancelOrder(t *testing.T) {
	db := domaintest.OpenStore(t)
	p := mustStockedDog(t, db, "", 10)

	o := mustOrder(t, db, store.Order{PetID: p.ID, Quantity: 4})
	if err := db.CancelOrder(ctx, o.ID, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	if it, _ := db.InventoryItem(ctx, p.ID); it.Quantity != 10 {
		t.Fatalf("stock %d after cancelling, want 10 back", it.Quantity)
	}
	_, err := db.Order(ctx, o.ID)
	assertError(t, err, store.ENOTFOUND, fmt.Sprintf("order %d not found", o.ID))
	assertError(t, db.CancelOrder(ctx, o.ID, store.Condition{}), store.ENOTFOUND, fmt.Sprintf("order %d not found", o.ID))

	// A complete order stays, and so does the stock.
	done := mustOrder(t, db, store.Order{PetID: p.ID, Quantity: 2, Complete: true})
	assertError(t, db.CancelOrder(ctx, done.ID, store.Condition{}), store.ECONFLICT, fmt.Sprintf("order %d is complete and cannot be cancelled", done.ID))
	if it, _ := db.InventoryItem(ctx, p.ID); it.Quantity != 8 {
		t.Fatalf("stock %d after refusing to cancel, want 8", it.Quantity)
	}

	// Stock given back never passes MaxStock.
	big := mustOrder(t, db, store.Order{PetID: p.ID, Quantity: 5})
	mustStock(t, db, p.ID, store.MaxStock-1)
	if err := db.CancelOrder(ctx, big.ID, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	if it, _ := db.InventoryItem(ctx, p.ID); it.Quantity != store.MaxStock {
		t.Fatalf("stock %d, want it capped at %d", it.Quantity, store.MaxStock)
	}

	// The order of a deleted pet can still be cancelled.
	o2 := mustOrder(t, db, store.Order{PetID: p.ID})
	if err := db.DeletePet(ctx, p.ID, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Order(ctx, o2.ID); err != nil {
		t.Fatalf("an order must outlive its pet: %v", err)
	}
	if err := db.CancelOrder(ctx, o2.ID, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	if orders, _, _ := db.ListOrders(ctx, store.OrderFilter{PetID: p.ID}); len(orders) != 1 || orders[0].ID != done.ID {
		t.Fatalf("orders of the deleted pet: %+v; want only the complete one", orders)
	}
}

func TestUpdateOrder(t *testing.T) {
	db := domaintest.OpenStore(t)
	p := mustStockedDog(t, db, "", 10)
	o := mustOrder(t, db, store.Order{PetID: p.ID, Quantity: 2})
	ship := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	yes := true
	got, err := db.UpdateOrder(ctx, o.ID, store.OrderUpdate{ShipDate: &ship}, store.Condition{})
	if err != nil || got.ShipDate == nil || !got.ShipDate.Equal(ship) || got.Complete || got.Quantity != 2 || got.PetID != p.ID {
		t.Fatalf("ship date update: %+v, %v", got, err)
	}
	got, err = db.UpdateOrder(ctx, o.ID, store.OrderUpdate{Complete: &yes}, store.Condition{})
	if err != nil || !got.Complete || got.ShipDate == nil || !got.ShipDate.Equal(ship) {
		t.Fatalf("complete update: %+v, %v", got, err)
	}
	stored, err := db.Order(ctx, o.ID)
	if err != nil || !stored.Complete || !stored.ShipDate.Equal(ship) {
		t.Fatalf("stored after updates: %+v, %v", stored, err)
	}
	_, err = db.UpdateOrder(ctx, 99, store.OrderUpdate{Complete: &yes}, store.Condition{})
	assertError(t, err, store.ENOTFOUND, "order 99 not found")
}

func TestListOrders_FiltersAndPagination(t *testing.T) {
	db := domaintest.OpenStore(t)
	c := mustCategory(t, db, "dogs")
	pets := []store.Pet{mustPet(t, db, "a", c.ID, ""), mustPet(t, db, "b", c.ID, ""), mustPet(t, db, "c", c.ID, "")}
	for _, p := range pets {
		mustStock(t, db, p.ID, 1000)
	}
	want := map[int64]store.Order{}
	for i := range 45 {
		o := mustOrder(t, db, store.Order{PetID: pets[i%3].ID, Quantity: 1 + i%4, Complete: i%5 == 0})
		want[o.ID] = o
	}
	check := func(t *testing.T) {
		t.Helper()
		yes, no := true, false
		for _, limit := range []int{1, 6, 100} {
			for _, pet := range []int64{0, pets[0].ID, pets[1].ID, pets[2].ID} {
				for _, complete := range []*bool{nil, &yes, &no} {
					f := store.OrderFilter{PetID: pet, Complete: complete}
					var exp []int64
					for id, o := range want {
						if (pet == 0 || o.PetID == pet) && (complete == nil || o.Complete == *complete) {
							exp = append(exp, id)
						}
					}
					slices.Sort(exp)
					got := storetest.Walk(t, "orders", limit, storetest.OrderID, func(p store.Page) ([]store.Order, int64, error) {
						f.Page = p
						return db.ListOrders(ctx, f)
					})
					if !slices.Equal(got, exp) {
						t.Fatalf("filter pet %d complete %v limit %d: got %v, want %v", pet, complete, limit, got, exp)
					}
				}
			}
		}
	}
	check(t)
	yes, no := true, false
	for id, o := range want {
		switch id % 4 {
		case 0:
			o.Complete = !o.Complete
			u := store.OrderUpdate{Complete: &no}
			if o.Complete {
				u.Complete = &yes
			}
			if _, err := db.UpdateOrder(ctx, id, u, store.Condition{}); err != nil {
				t.Fatal(err)
			}
			want[id] = o
		case 1:
			if o.Complete {
				continue
			}
			if err := db.CancelOrder(ctx, id, store.Condition{}); err != nil {
				t.Fatal(err)
			}
			delete(want, id)
		}
	}
	check(t)
}

func TestSetStock(t *testing.T) {
	db := domaintest.OpenStore(t)
	p := mustDog(t, db, store.StatusPending)

	it, err := db.SetStock(ctx, p.ID, store.MaxStock, store.Condition{})
	if err != nil || it != (store.InventoryItem{PetID: p.ID, Quantity: store.MaxStock, Status: store.StatusPending}) {
		t.Fatalf("SetStock: %+v, %v", it, err)
	}
	if got, err := db.InventoryItem(ctx, p.ID); err != nil || got != it {
		t.Fatalf("InventoryItem: %+v, %v; want %+v", got, err, it)
	}
	_, err = db.SetStock(ctx, p.ID, store.MaxStock+1, store.Condition{})
	assertError(t, err, store.EINVALID, "quantity must be between 0 and 1000000, got 1000001")
	_, err = db.SetStock(ctx, p.ID, -1, store.Condition{})
	assertError(t, err, store.EINVALID, "quantity must be between 0 and 1000000, got -1")
	_, err = db.SetStock(ctx, 42, 1, store.Condition{})
	assertError(t, err, store.ENOTFOUND, "pet 42 not found")
	_, err = db.InventoryItem(ctx, 42)
	assertError(t, err, store.ENOTFOUND, "pet 42 not found")
	if got, _ := db.InventoryItem(ctx, p.ID); got.Quantity != store.MaxStock {
		t.Fatalf("stock %d after refused updates", got.Quantity)
	}
	if it, err := db.SetStock(ctx, p.ID, 0, store.Condition{}); err != nil || it.Quantity != 0 {
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
			if err := db.ReplacePet(ctx, &p, store.Condition{}); err != nil {
				t.Fatal(err)
			}
			it.Status = store.StatusSold
			want[id] = it
		case 1:
			if err := db.DeletePet(ctx, id, store.Condition{}); err != nil {
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
				err := db.PlaceOrder(ctx, &o, nil)
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
					if err := db.CancelOrder(ctx, o.ID, store.Condition{}); err != nil {
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
			if _, err := db.SetStock(ctx, p.ID, 10*(i%5), store.Condition{}); err != nil {
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
	if _, err := db.SetStock(ctx, p.ID, before.Quantity+30, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	start := before.Quantity + 30
	taken := 0
	for range 10 {
		o := mustOrder(t, db, store.Order{PetID: p.ID, Quantity: 2})
		taken += 2
		if o.ID%2 == 0 {
			if err := db.CancelOrder(ctx, o.ID, store.Condition{}); err != nil {
				t.Fatal(err)
			}
			taken -= 2
		}
	}
	if it, _ := db.InventoryItem(ctx, p.ID); it.Quantity != start-taken {
		t.Fatalf("stock %d, want %d - %d", it.Quantity, start, taken)
	}
}
