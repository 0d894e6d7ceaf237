package boltstore

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"petstore/store"
	"petstore/store/storetest"
)

// TestImportPets checks that imported pets are indistinguishable from
// created ones through the normal API: ids, names, the status and category
// filters, pagination, inventory, the category's pet count, a restart.
func TestImportPets(t *testing.T) {
	ctx := context.Background()
	defer func(n int) { importChunk = n }(importChunk)
	importChunk = 7 // so that imports span several transactions

	db := openTestDB(t)
	dogs, cats := store.Category{Name: "dogs"}, store.Category{Name: "cats"}
	for _, c := range []*store.Category{&dogs, &cats} {
		if err := db.CreateCategory(ctx, c, nil); err != nil {
			t.Fatal(err)
		}
	}
	first := store.Pet{Name: "Rex", CategoryID: dogs.ID}
	if err := db.CreatePet(ctx, &first, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.ImportPets(ctx, dogs.ID, 30, store.StatusPending); err != nil {
		t.Fatal(err)
	}
	if err := db.ImportPets(ctx, cats.ID, 10, ""); err != nil {
		t.Fatal(err)
	}
	last := store.Pet{Name: "Tom", CategoryID: cats.ID, Status: store.StatusSold}
	if err := db.CreatePet(ctx, &last, nil); err != nil {
		t.Fatal(err)
	}
	if first.ID != 1 || last.ID != 42 {
		t.Fatalf("created pets got ids %d and %d, want 1 and 42", first.ID, last.ID)
	}

	// Refused imports write nothing.
	if err := db.ImportPets(ctx, 99, 5, ""); store.ErrorCode(err) != store.EUNPROCESSABLE {
		t.Fatalf("import into a missing category: %v", err)
	}
	if err := db.ImportPets(ctx, dogs.ID, 5, "lost"); store.ErrorCode(err) != store.EINVALID {
		t.Fatalf("import with a bad status: %v", err)
	}
	if err := db.ImportPets(ctx, dogs.ID, 0, ""); err != nil {
		t.Fatalf("import of nothing: %v", err)
	}

	ids := func(from, to int64) []int64 {
		var out []int64
		for id := from; id <= to; id++ {
			out = append(out, id)
		}
		return out
	}
	stock := map[int64]int{} // pet id -> quantity, where not 0
	check := func(t *testing.T, db *DB) {
		t.Helper()
		for _, tc := range []struct {
			f    store.PetFilter
			want []int64
		}{
			{store.PetFilter{}, ids(1, 42)},
			{store.PetFilter{Status: store.StatusPending}, ids(2, 31)},
			{store.PetFilter{Status: store.StatusAvailable}, append([]int64{1}, ids(32, 41)...)},
			{store.PetFilter{Status: store.StatusSold}, []int64{42}},
			{store.PetFilter{CategoryID: dogs.ID}, ids(1, 31)},
			{store.PetFilter{CategoryID: cats.ID}, ids(32, 42)},
			{store.PetFilter{CategoryID: dogs.ID, Status: store.StatusPending}, ids(2, 31)},
			{store.PetFilter{CategoryID: cats.ID, Status: store.StatusAvailable}, ids(32, 41)},
			{store.PetFilter{CategoryID: dogs.ID, Status: store.StatusAvailable}, []int64{1}},
		} {
			f := tc.f
			got := storetest.Walk(t, "pets", 4, storetest.PetID, func(p store.Page) ([]store.Pet, int64, error) {
				f.Page = p
				return db.ListPets(ctx, f)
			})
			if !slices.Equal(got, tc.want) {
				t.Fatalf("filter %+v: got %v, want %v", tc.f, got, tc.want)
			}
		}

		p, err := db.Pet(ctx, 2)
		if err != nil || p != (store.Pet{ID: 2, Name: "pet 1", CategoryID: dogs.ID, Status: store.StatusPending, Version: 1}) {
			t.Fatalf("first imported pet: %+v, %v", p, err)
		}
		p, err = db.Pet(ctx, 41)
		if err != nil || p != (store.Pet{ID: 41, Name: "pet 10", CategoryID: cats.ID, Status: store.StatusAvailable, Version: 1}) {
			t.Fatalf("last imported pet: %+v, %v", p, err)
		}
		for id := int64(2); id <= 41; id++ {
			it, err := db.InventoryItem(ctx, id)
			want := store.StatusPending
			if id > 31 {
				want = store.StatusAvailable
			}
			if err != nil || it != (store.InventoryItem{PetID: id, Quantity: stock[id], Status: want}) {
				t.Fatalf("inventory of pet %d: %+v, %v", id, it, err)
			}
		}
		items, _, err := db.ListInventory(ctx, store.InventoryFilter{Status: store.StatusPending, Page: store.Page{Limit: store.MaxPageSize}})
		if err != nil || len(items) != 30 {
			t.Fatalf("pending inventory: %d items, %v", len(items), err)
		}
		// The category index counts imported pets.
		err = db.DeleteCategory(ctx, cats.ID, store.Condition{})
		if store.ErrorCode(err) != store.ECONFLICT || store.ErrorMessage(err) != fmt.Sprintf("category %d still has 11 pets", cats.ID) {
			t.Fatalf("deleting a category with imported pets: %v", err)
		}
	}
	check(t, db)

	// Imported pets behave like others: stock, orders, replace, delete.
	if _, err := db.SetStock(ctx, 5, 3, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	o := store.Order{PetID: 5, Quantity: 2}
	if err := db.PlaceOrder(ctx, &o, nil); err != nil {
		t.Fatal(err)
	}
	stock[5] = 1

	// Everything is on disk.
	check(t, reopenTestDB(t, db))
}
