package store_test

import (
	"fmt"
	"slices"
	"testing"

	"petstore/store"
)

func TestSetStock(t *testing.T) {
	db := MustOpenDB(t)
	c := mustCategory(t, db, "dogs")
	p := mustPet(t, db, "Rex", c.ID, store.StatusPending)

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
	db := MustOpenDB(t)
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
