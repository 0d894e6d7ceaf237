package store_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"petstore/store"
	"petstore/store/storetest"
)

// itemID and keyID are the ids storetest.Walk needs of inventory entries
// and API keys.
func itemID(it store.InventoryItem) int64 { return it.PetID }
func keyID(k store.APIKey) int64          { return k.ID }

// testPetPages lists pets through every filter, by pages of several sizes,
// and checks each walk against what was created.
func testPetPages(t *testing.T, s store.Store) {
	cats := []store.Category{newCategory(t, s, "dogs"), newCategory(t, s, "cats")}
	statuses := []store.PetStatus{store.StatusAvailable, store.StatusPending, store.StatusSold}
	var pets []store.Pet
	for i := range 45 {
		p := newPet(t, s, fmt.Sprintf("pet %d", i), cats[i%2].ID, statuses[i%3])
		p.Version = 0 // lists leave it out
		pets = append(pets, p)
	}
	// A deleted pet leaves a hole that pages step over.
	check(t, s.DeletePet(ctx, pets[10].ID, store.Condition{}))
	pets = slices.Delete(pets, 10, 11)
	for _, f := range []store.PetFilter{
		{},
		{Status: store.StatusPending},
		{CategoryID: cats[1].ID},
		{Status: store.StatusSold, CategoryID: cats[0].ID},
		{CategoryID: 999},
	} {
		var want []int64
		for _, p := range pets {
			if (f.Status == "" || p.Status == f.Status) && (f.CategoryID == 0 || p.CategoryID == f.CategoryID) {
				want = append(want, p.ID)
			}
		}
		for _, limit := range []int{1, 7, 0, store.MaxPageSize + 5} {
			f.Limit = limit
			what := fmt.Sprintf("pets %+v", f)
			got := storetest.Walk(t, what, limit, storetest.PetID, func(p store.Page) ([]store.Pet, int64, error) {
				f.Page = p
				return s.ListPets(ctx, f)
			})
			if !slices.Equal(got, want) {
				t.Errorf("%s: %v, want %v", what, got, want)
			}
		}
	}
	// A deep page starts where its cursor says, whatever came before.
	deep, next, err := s.ListPets(ctx, store.PetFilter{Page: store.Page{Limit: 3, After: pets[39].ID}})
	if err != nil || len(deep) != 3 || deep[0] != pets[40] || next != pets[42].ID {
		t.Errorf("a deep page: %+v next %d %v", deep, next, err)
	}
	last, next, err := s.ListPets(ctx, store.PetFilter{Page: store.Page{Limit: 3, After: pets[41].ID}})
	if err != nil || len(last) != 2 || next != 0 {
		t.Errorf("the last page: %+v next %d %v", last, next, err)
	}
	// A negative limit means one, a negative cursor the start.
	if one, _, err := s.ListPets(ctx, store.PetFilter{Page: store.Page{Limit: -5, After: -5}}); err != nil || len(one) != 1 || one[0] != pets[0] {
		t.Errorf("limit -5 after -5: %+v %v", one, err)
	}
	// The largest cursor is past every id: an empty page, the last.
	if none, next, err := s.ListPets(ctx, store.PetFilter{Page: store.Page{After: math.MaxInt64}}); err != nil || none == nil || len(none) != 0 || next != 0 {
		t.Errorf("after the largest id: %+v next %d %v", none, next, err)
	}
	_, _, err = s.ListPets(ctx, store.PetFilter{Status: "lost"})
	wantError(t, "an unknown status filter", err, store.EINVALID, `status "lost" is not one of available, pending, sold`)
}

func testOrderAndInventoryPages(t *testing.T, s store.Store) {
	dogs := newCategory(t, s, "dogs")
	a := newPet(t, s, "A", dogs.ID, store.StatusAvailable)
	b := newPet(t, s, "B", dogs.ID, store.StatusPending)
	c := newPet(t, s, "C", dogs.ID, store.StatusAvailable)
	for _, p := range []store.Pet{a, b, c} {
		must(s.SetStock(ctx, p.ID, 100, store.Condition{}))(t)
	}
	var orders []store.Order
	done := true
	for i := range 25 {
		o := store.Order{PetID: []int64{a.ID, b.ID}[i%2], Quantity: 1 + i%3}
		check(t, s.PlaceOrder(ctx, &o, nil))
		if i%4 == 0 {
			o = must(s.UpdateOrder(ctx, o.ID, store.OrderUpdate{Complete: &done}, store.Condition{}))(t)
		}
		orders = append(orders, o)
	}
	for _, f := range []store.OrderFilter{
		{},
		{PetID: a.ID},
		{Complete: new(true)},
		{Complete: new(false)},
		{PetID: b.ID, Complete: new(true)},
		{PetID: c.ID},
	} {
		var want []int64
		for _, o := range orders {
			if (f.PetID == 0 || o.PetID == f.PetID) && (f.Complete == nil || o.Complete == *f.Complete) {
				want = append(want, o.ID)
			}
		}
		for _, limit := range []int{1, 4, 0} {
			what := fmt.Sprintf("orders pet %d complete %v limit %d", f.PetID, f.Complete, limit)
			got := storetest.Walk(t, what, limit, storetest.OrderID, func(p store.Page) ([]store.Order, int64, error) {
				f.Page = p
				return s.ListOrders(ctx, f)
			})
			if !slices.Equal(got, want) {
				t.Errorf("%s: %v, want %v", what, got, want)
			}
		}
	}
	for _, f := range []store.InventoryFilter{{}, {Status: store.StatusAvailable}, {Status: store.StatusSold}} {
		var want []int64
		for _, p := range []store.Pet{a, b, c} {
			if f.Status == "" || p.Status == f.Status {
				want = append(want, p.ID)
			}
		}
		got := storetest.Walk(t, fmt.Sprintf("inventory %q", f.Status), 1, itemID, func(p store.Page) ([]store.InventoryItem, int64, error) {
			f.Page = p
			return s.ListInventory(ctx, f)
		})
		if !slices.Equal(got, want) {
			t.Errorf("inventory %q: %v, want %v", f.Status, got, want)
		}
	}
	items, _ := must2(s.ListInventory(ctx, store.InventoryFilter{Status: store.StatusPending}))(t)
	if len(items) != 1 || items[0].PetID != b.ID || items[0].Status != store.StatusPending {
		t.Errorf("pending inventory: %+v", items)
	}
}

// importer is a store's bulk import, which seeds the load benchmark; each
// store has one of its own, outside store.Store.
type importer interface {
	ImportPets(ctx context.Context, categoryID int64, n int, status store.PetStatus) error
}

func testImportPets(t *testing.T, db store.Store) {
	s, ok := db.(interface {
		store.Store
		importer
	})
	if !ok {
		t.Fatalf("%T has no ImportPets", db)
	}
	dogs := newCategory(t, s, "dogs")
	check(t, s.ImportPets(ctx, dogs.ID, 30, store.StatusPending))
	pets, _ := must2(s.ListPets(ctx, store.PetFilter{CategoryID: dogs.ID, Page: store.Page{Limit: store.MaxPageSize}}))(t)
	if len(pets) != 30 || pets[0].Name != "pet 1" || pets[29].Name != "pet 30" || pets[5].Status != store.StatusPending {
		t.Fatalf("imported: %d pets, first %+v", len(pets), pets[0])
	}
	if it := must(s.InventoryItem(ctx, pets[29].ID))(t); it != (store.InventoryItem{PetID: pets[29].ID, Status: store.StatusPending}) {
		t.Errorf("an imported pet's inventory: %+v", it)
	}
	if p := newPet(t, s, "after", dogs.ID, ""); p.ID <= pets[29].ID {
		t.Errorf("a pet created after the import got id %d", p.ID)
	}
	wantError(t, "importing into a missing category", s.ImportPets(ctx, 999, 3, ""), store.EUNPROCESSABLE, "category 999 does not exist")
	wantError(t, "importing a negative count", s.ImportPets(ctx, dogs.ID, -1, ""), store.EINVALID, "cannot import -1 pets")
	wantError(t, "importing an unknown status", s.ImportPets(ctx, dogs.ID, 1, "lost"), store.EINVALID, `status "lost" is not one of available, pending, sold`)
}
