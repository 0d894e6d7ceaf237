package boltstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/boltstore"
)

func TestPet_CRUD(t *testing.T) {
	db := domaintest.OpenStore(t)
	dogs := mustCategory(t, db, "dogs")
	cats := mustCategory(t, db, "cats")

	p := store.Pet{ID: 999, Name: "Rex", CategoryID: dogs.ID}
	if err := db.CreatePet(ctx, &p, nil); err != nil {
		t.Fatal(err)
	}
	if p.ID != 1 {
		t.Fatalf("id %d: a client's id must be ignored and ids start at 1", p.ID)
	}
	if p.Status != store.StatusAvailable {
		t.Fatalf("status %q, want the default available", p.Status)
	}
	if got, err := db.Pet(ctx, p.ID); err != nil || got != p {
		t.Fatalf("Pet: %+v, %v; want %+v", got, err, p)
	}
	it, err := db.InventoryItem(ctx, p.ID)
	if err != nil || it != (store.InventoryItem{PetID: p.ID, Quantity: 0, Status: store.StatusAvailable}) {
		t.Fatalf("new pet's inventory entry: %+v, %v", it, err)
	}

	r := store.Pet{ID: p.ID, Name: "Felix", CategoryID: cats.ID, Status: store.StatusSold}
	if err := db.ReplacePet(ctx, &r, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Pet(ctx, p.ID); err != nil || got != r {
		t.Fatalf("after replace: %+v, %v; want %+v", got, err, r)
	}
	if it, err := db.InventoryItem(ctx, p.ID); err != nil || it.Status != store.StatusSold {
		t.Fatalf("inventory entry after a status change: %+v, %v", it, err)
	}
	// A replacement without status means available, as for a new pet.
	r2 := store.Pet{ID: p.ID, Name: "Felix", CategoryID: cats.ID}
	if err := db.ReplacePet(ctx, &r2, store.Condition{}); err != nil || r2.Status != store.StatusAvailable {
		t.Fatalf("replace without status: %+v, %v", r2, err)
	}

	if err := db.DeletePet(ctx, p.ID, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	_, err = db.Pet(ctx, p.ID)
	assertError(t, err, store.ENOTFOUND, "pet 1 not found")
	_, err = db.InventoryItem(ctx, p.ID)
	assertError(t, err, store.ENOTFOUND, "pet 1 not found")
	assertError(t, db.DeletePet(ctx, p.ID, store.Condition{}), store.ENOTFOUND, "pet 1 not found")
}

func TestPet_Errors(t *testing.T) {
	db := domaintest.OpenStore(t)
	dogs := mustCategory(t, db, "dogs")
	p := mustPet(t, db, "Rex", dogs.ID, "")

	assertError(t, db.CreatePet(ctx, &store.Pet{Name: "x", CategoryID: 7}, nil), store.EUNPROCESSABLE, "category 7 does not exist")
	assertError(t, db.CreatePet(ctx, &store.Pet{Name: "x"}, nil), store.EUNPROCESSABLE, "category 0 does not exist")
	assertError(t, db.CreatePet(ctx, &store.Pet{Name: "x", CategoryID: dogs.ID, Status: "lost"}, nil),
		store.EINVALID, `status "lost" is not one of available, pending, sold`)
	_, err := db.Pet(ctx, 42)
	assertError(t, err, store.ENOTFOUND, "pet 42 not found")
	assertError(t, db.ReplacePet(ctx, &store.Pet{ID: 42, Name: "x", CategoryID: dogs.ID}, store.Condition{}), store.ENOTFOUND, "pet 42 not found")
	assertError(t, db.ReplacePet(ctx, &store.Pet{ID: p.ID, Name: "x", CategoryID: 9}, store.Condition{}), store.EUNPROCESSABLE, "category 9 does not exist")
	assertError(t, db.DeletePet(ctx, 42, store.Condition{}), store.ENOTFOUND, "pet 42 not found")
	_, _, err = db.ListPets(ctx, store.PetFilter{Status: "lost"})
	assertError(t, err, store.EINVALID, `status "lost" is not one of available, pending, sold`)

	// Failed writes changed nothing.
	if got, err := db.Pet(ctx, p.ID); err != nil || got != p {
		t.Fatalf("pet after failed writes: %+v, %v; want %+v", got, err, p)
	}
	all, _, err := db.ListPets(ctx, store.PetFilter{})
	if err != nil || len(all) != 1 {
		t.Fatalf("pets after failed creates: %+v, %v", all, err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := db.CreatePet(cancelled, &store.Pet{Name: "x", CategoryID: dogs.ID}, nil); err != context.Canceled {
		t.Fatalf("CreatePet with a cancelled context: %v", err)
	}
}

// listAllPets walks every page of a filtered list and returns the ids in the
// order they came, failing on a page that is too long or out of order.
func listAllPets(tb testing.TB, db *boltstore.DB, f store.PetFilter) []int64 {
	tb.Helper()
	var ids []int64
	for pages := 0; ; pages++ {
		if pages > 1000 {
			tb.Fatal("pagination does not end")
		}
		page, next, err := db.ListPets(ctx, f)
		if err != nil {
			tb.Fatal(err)
		}
		if len(page) > f.Limit {
			tb.Fatalf("page of %d with limit %d", len(page), f.Limit)
		}
		for _, p := range page {
			if f.Status != "" && p.Status != f.Status || f.CategoryID != 0 && p.CategoryID != f.CategoryID {
				tb.Fatalf("pet %+v does not match filter %+v", p, f)
			}
			ids = append(ids, p.ID)
		}
		if next == 0 {
			return ids
		}
		if len(page) != f.Limit || next != page[len(page)-1].ID {
			tb.Fatalf("next %d after a page of %d ending at %+v", next, len(page), page)
		}
		f.After = next
	}
}

func TestListPets_FiltersAndPagination(t *testing.T) {
	db := domaintest.OpenStore(t)
	cats := []store.Category{mustCategory(t, db, "a"), mustCategory(t, db, "b"), mustCategory(t, db, "c")}
	statuses := []store.PetStatus{store.StatusAvailable, store.StatusPending, store.StatusSold}

	// want holds each pet's current state; the filters are checked against it.
	want := map[int64]store.Pet{}
	for i := range 60 {
		p := mustPet(t, db, "p", cats[i%3].ID, statuses[(i/3)%3])
		want[p.ID] = p
	}
	check := func(t *testing.T) {
		t.Helper()
		for _, limit := range []int{1, 7, 100} {
			for _, c := range append([]store.Category{{}}, cats...) {
				for _, s := range append([]store.PetStatus{""}, statuses...) {
					f := store.PetFilter{Status: s, CategoryID: c.ID, Page: store.Page{Limit: limit}}
					var exp []int64
					for id, p := range want {
						if (s == "" || p.Status == s) && (c.ID == 0 || p.CategoryID == c.ID) {
							exp = append(exp, id)
						}
					}
					slices.Sort(exp)
					if got := listAllPets(t, db, f); !slices.Equal(got, exp) {
						t.Fatalf("filter %+v: got %v, want %v", f, got, exp)
					}
				}
			}
		}
	}
	check(t)

	// Move pets between statuses and categories, and delete some.
	for id, p := range want {
		switch id % 5 {
		case 0:
			p.Status = store.StatusSold
			p.CategoryID = cats[2].ID
		case 1:
			p.Status = store.StatusPending
		case 2:
			p.CategoryID = cats[0].ID
		case 3:
			if err := db.DeletePet(ctx, id, store.Condition{}); err != nil {
				t.Fatal(err)
			}
			delete(want, id)
			continue
		default:
			continue
		}
		if err := db.ReplacePet(ctx, &p, store.Condition{}); err != nil {
			t.Fatal(err)
		}
		want[id] = p
	}
	check(t)

	// The inventory follows its pets' statuses.
	for id, p := range want {
		it, err := db.InventoryItem(ctx, id)
		if err != nil || it.Status != p.Status {
			t.Fatalf("inventory of %+v: %+v, %v", p, it, err)
		}
	}
}

func TestListPets_Limits(t *testing.T) {
	db := domaintest.OpenStore(t)
	c := mustCategory(t, db, "a")
	for range store.MaxPageSize + 5 {
		mustPet(t, db, "p", c.ID, "")
	}
	for _, tc := range []struct{ limit, want int }{
		{0, store.DefaultPageSize}, {-3, 1}, {1, 1}, {store.MaxPageSize + 1, store.MaxPageSize},
	} {
		page, next, err := db.ListPets(ctx, store.PetFilter{Page: store.Page{Limit: tc.limit}})
		if err != nil || len(page) != tc.want || next != page[len(page)-1].ID {
			t.Fatalf("limit %d: %d pets, next %d, %v; want %d", tc.limit, len(page), next, err, tc.want)
		}
	}
	// The last page says there is no next one, even when it is exactly full.
	page, next, err := db.ListPets(ctx, store.PetFilter{Page: store.Page{Limit: 5, After: store.MaxPageSize}})
	if err != nil || len(page) != 5 || next != 0 {
		t.Fatalf("last page: %d pets, next %d, %v", len(page), next, err)
	}
	page, next, err = db.ListPets(ctx, store.PetFilter{Page: store.Page{After: 1<<63 - 1}})
	if err != nil || len(page) != 0 || next != 0 || page == nil {
		t.Fatalf("after the largest id: %v, %d, %v; want an empty, non-nil page", page, next, err)
	}
}

// TestPetJSONIsTheAPIForm: the stored bytes decode to the same pet that
// Pet returns, and a missing pet is ENOTFOUND.
func TestPetJSONIsTheAPIForm(t *testing.T) {
	db := domaintest.OpenStore(t)
	ctx := context.Background()
	c := &store.Category{Name: "dogs"}
	if err := db.CreateCategory(ctx, c, nil); err != nil {
		t.Fatal(err)
	}
	p := &store.Pet{Name: "Rex", CategoryID: c.ID, Status: store.StatusPending}
	if err := db.CreatePet(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	raw, _, err := db.PetJSON(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got store.Pet
	err = json.Unmarshal(raw, &got)
	got.Version = p.Version // kept beside the JSON, not in it
	if err != nil || got != *p {
		t.Fatalf("PetJSON %s decodes to %+v (%v), want %+v", raw, got, err, *p)
	}
	if _, _, err := db.PetJSON(ctx, p.ID+1); store.ErrorCode(err) != store.ENOTFOUND {
		t.Fatalf("missing pet: %v", err)
	}
}

// TestPetJSONFollowsWrites reads a pet (so that it is cached) around every
// kind of change, and expects each read after an acknowledged write to show
// it; then races readers against a writer.
func TestPetJSONFollowsWrites(t *testing.T) {
	db := domaintest.OpenStore(t)
	cat := store.Category{Name: "dogs"}
	if err := db.CreateCategory(ctx, &cat, nil); err != nil {
		t.Fatal(err)
	}
	p := store.Pet{Name: "Rex", CategoryID: cat.ID}
	if err := db.CreatePet(ctx, &p, nil); err != nil {
		t.Fatal(err)
	}
	name := func() string {
		t.Helper()
		raw, _, err := db.PetJSON(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got store.Pet
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		return got.Name
	}
	if got := name(); got != "Rex" {
		t.Fatalf("name %q, want Rex", got)
	}
	for i := range 20 {
		p.Name = fmt.Sprintf("Rex %d", i)
		if err := db.ReplacePet(ctx, &p, store.Condition{}); err != nil {
			t.Fatal(err)
		}
		if got := name(); got != p.Name {
			t.Fatalf("after replacing: name %q, want %q", got, p.Name)
		}
	}

	// Readers keep the pet hot while a writer renames it; after each
	// rename is acknowledged, a new read must see it.
	id := p.ID
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					_, _, _ = db.PetJSON(ctx, id)
				}
			}
		}()
	}
	for i := range 200 {
		p.Name = fmt.Sprintf("raced %d", i)
		if err := db.ReplacePet(ctx, &p, store.Condition{}); err != nil {
			t.Fatal(err)
		}
		if got := name(); got != p.Name {
			close(stop)
			wg.Wait()
			t.Fatalf("after replacing under concurrent reads: name %q, want %q", got, p.Name)
		}
	}
	close(stop)
	wg.Wait()

	if err := db.DeletePet(ctx, p.ID, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.PetJSON(ctx, p.ID); store.ErrorCode(err) != store.ENOTFOUND {
		t.Fatalf("after delete: %v, want not found", err)
	}
}
