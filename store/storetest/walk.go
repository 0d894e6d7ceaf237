package storetest

import (
	"testing"

	"petstore/store"
)

// Walk lists every page of limit items through list, checking that each is
// a non-nil list of at most limit items in increasing id order that starts
// after the cursor, and returns the ids of all.
func Walk[T any](t *testing.T, what string, limit int, id func(T) int64, list func(store.Page) ([]T, int64, error)) []int64 {
	t.Helper()
	var ids []int64
	p := store.Page{Limit: limit}
	for range 1000 {
		page, next, err := list(p)
		if err != nil {
			t.Fatalf("%s after %d: %v", what, p.After, err)
		}
		if page == nil || len(page) > p.Size() {
			t.Fatalf("%s after %d: %d items, nil %v", what, p.After, len(page), page == nil)
		}
		for _, v := range page {
			if id(v) <= p.After {
				t.Fatalf("%s after %d: item %d", what, p.After, id(v))
			}
			ids = append(ids, id(v))
		}
		if next == 0 {
			return ids
		}
		if next != id(page[len(page)-1]) {
			t.Fatalf("%s: next cursor %d is not the page's last id %d", what, next, id(page[len(page)-1]))
		}
		p.After = next
	}
	t.Fatalf("%s: more than 1000 pages", what)
	return nil
}

// PetID and OrderID are the ids Walk needs of pets and orders.
func PetID(p store.Pet) int64     { return p.ID }
func OrderID(o store.Order) int64 { return o.ID }
