package boltstore_test

import (
	"testing"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/storetest"
)

func TestCategory_CRUD(t *testing.T) {
	db := domaintest.OpenStore(t)
	c := store.Category{ID: 50, Name: "dogs", Description: "barks"}
	if err := db.CreateCategory(ctx, &c, nil); err != nil {
		t.Fatal(err)
	}
	if c.ID != 1 {
		t.Fatalf("id %d, want 1: a client's id must be ignored", c.ID)
	}
	if got, err := db.Category(ctx, c.ID); err != nil || got != c {
		t.Fatalf("Category: %+v, %v; want %+v", got, err, c)
	}
	r := store.Category{ID: c.ID, Name: "hounds"}
	if err := db.ReplaceCategory(ctx, &r, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Category(ctx, c.ID); err != nil || got != r {
		t.Fatalf("after replace: %+v, %v; want %+v", got, err, r)
	}
	if err := db.DeleteCategory(ctx, c.ID, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	_, err := db.Category(ctx, c.ID)
	assertError(t, err, store.ENOTFOUND, "category 1 not found")
	assertError(t, db.DeleteCategory(ctx, c.ID, store.Condition{}), store.ENOTFOUND, "category 1 not found")
	assertError(t, db.ReplaceCategory(ctx, &store.Category{ID: 8, Name: "x"}, store.Condition{}), store.ENOTFOUND, "category 8 not found")
}

func TestDeleteCategory_WithPets(t *testing.T) {
	db := domaintest.OpenStore(t)
	mustCategory(t, db, "a")
	mustCategory(t, db, "b")
	c := mustCategory(t, db, "c")
	p1 := mustPet(t, db, "p1", c.ID, "")
	p2 := mustPet(t, db, "p2", c.ID, store.StatusSold)

	assertError(t, db.DeleteCategory(ctx, c.ID, store.Condition{}), store.ECONFLICT, "category 3 still has 2 pets")
	if err := db.DeletePet(ctx, p1.ID, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	assertError(t, db.DeleteCategory(ctx, c.ID, store.Condition{}), store.ECONFLICT, "category 3 still has 1 pet")
	// Moving the last pet away frees the category.
	p2.CategoryID = 1
	if err := db.ReplacePet(ctx, &p2, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	assertError(t, db.DeleteCategory(ctx, 1, store.Condition{}), store.ECONFLICT, "category 1 still has 1 pet")
	if err := db.DeleteCategory(ctx, c.ID, store.Condition{}); err != nil {
		t.Fatal(err)
	}
}

func TestListCategories_Pagination(t *testing.T) {
	db := domaintest.OpenStore(t)
	var want []int64
	for range 25 {
		want = append(want, mustCategory(t, db, "c").ID)
	}
	if err := db.DeleteCategory(ctx, 10, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	want = append(want[:9], want[10:]...)

	got := storetest.Walk(t, "categories", 4, func(c store.Category) int64 { return c.ID },
		func(p store.Page) ([]store.Category, int64, error) { return db.ListCategories(ctx, p) })
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}
