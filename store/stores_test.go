package store_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/postgres/pgtest"
	"petstore/store/storetest"
)

// TestMain stops the PostgreSQL cluster the tests shared.
func TestMain(m *testing.M) {
	pgtest.Main(m)
}

// TestStores is the one suite every store.Store must pass: the same calls
// must give the same answers, error codes and messages included, on the
// bbolt file and on PostgreSQL. Each part runs on a new, empty store, as a
// subtest named after its function and its store: testPets runs as
// "bolt/Pets" and "postgres/Pets". The two stores run beside each other.
func TestStores(t *testing.T) {
	for _, s := range []struct {
		name string
		open func(*testing.T) store.Store
	}{
		{"bolt", func(t *testing.T) store.Store { return domaintest.OpenStore(t) }},
		{"postgres", func(t *testing.T) store.Store { return domaintest.OpenPostgres(t, pgtest.URL(t)) }},
	} {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			run(t, s.open)
		})
	}
}

// run runs the whole suite, each part on a new store from open.
func run(t *testing.T, open func(*testing.T) store.Store) {
	for _, part := range []func(*testing.T, store.Store){
		testPets, testPetVersions, testCategoryAndOrderVersions, testIfNoneMatchAndStockConditions,
		testCategories, testInventory, testOrders, testOrderRace, testCreateRace, testDeleteCategoryRace, testAPIKeyChecksTogether,
		testPetPages, testOrderAndInventoryPages, testImportPets, testAPIKeys, testAdminToken, testProject,
		testDomains, testSettings, testKeyValue, testLocks, testEvents, testDeliveries,
		testManualRetryEndsSchedule, testDeliveryClaimRace, testSecretRotation, testKeptAnswers,
		testKeptAdminAnswers, testSweepKeptAnswers, testKeyRace, testKeptRecords,
		testAnswersKeptByAnOlderVersion, testFinishDeliveriesInOneBatch, testWebhookQueue, testQueueLeavesOutAFullWebhook,
	} {
		name := runtime.FuncForPC(reflect.ValueOf(part).Pointer()).Name()
		name = name[strings.LastIndex(name, ".test")+len(".test"):]
		t.Run(name, func(t *testing.T) { part(t, open(t)) })
	}
}

var ctx = context.Background()

// wantError fails unless err is an *store.Error with this code and message.
func wantError(t *testing.T, what string, err error, code, message string) {
	t.Helper()
	var e *store.Error
	if !errors.As(err, &e) {
		t.Errorf("%s: got %v, want %s %q", what, err, code, message)
		return
	}
	if e.Code != code || e.Message != message {
		t.Errorf("%s: got %s %q, want %s %q", what, e.Code, e.Message, code, message)
	}
}

// must gives v, or fails the test with err: must(s.Pet(ctx, id))(t).
func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newCategory(t *testing.T, s store.Store, name string) store.Category {
	t.Helper()
	c := store.Category{Name: name, Description: "all the " + name}
	check(t, s.CreateCategory(ctx, &c, nil))
	return c
}

// newWebhook makes an enabled webhook of url for every event, signed
// with secret; an empty secret makes it disabled.
func newWebhook(t *testing.T, s store.Store, url, secret string) store.Webhook {
	t.Helper()
	w := store.Webhook{URL: url, Events: []string{"*"}, Enabled: secret != "", Secret: secret}
	check(t, s.CreateWebhook(ctx, &w, nil))
	return w
}

func newPet(t *testing.T, s store.Store, name string, categoryID int64, status store.PetStatus) store.Pet {
	t.Helper()
	p := store.Pet{Name: name, CategoryID: categoryID, Status: status}
	check(t, s.CreatePet(ctx, &p, nil))
	return p
}

func testPets(t *testing.T, s store.Store) {
	dogs := newCategory(t, s, "dogs")
	cats := newCategory(t, s, "cats")
	rex := newPet(t, s, "Rex", dogs.ID, "")
	if rex.ID <= 0 || rex.Status != store.StatusAvailable {
		t.Fatalf("created %+v: want an id and the status available", rex)
	}
	if got := must(s.Pet(ctx, rex.ID))(t); got != rex {
		t.Errorf("Pet: %+v, want %+v", got, rex)
	}
	if got, v, err := s.PetJSON(ctx, rex.ID); err != nil || string(got) != string(rex.AppendJSON(nil)) || v != 1 {
		t.Errorf("PetJSON: %s version %d %v, want %s version 1", got, v, err, rex.AppendJSON(nil))
	}
	_, err := s.Pet(ctx, 999)
	wantError(t, "a missing pet", err, store.ENOTFOUND, "pet 999 not found")
	_, _, err = s.PetJSON(ctx, 999)
	wantError(t, "PetJSON of a missing pet", err, store.ENOTFOUND, "pet 999 not found")
	err = s.CreatePet(ctx, &store.Pet{Name: "Ghost", CategoryID: 77}, nil)
	wantError(t, "a pet in a missing category", err, store.EUNPROCESSABLE, "category 77 does not exist")
	err = s.CreatePet(ctx, &store.Pet{Name: "Odd", CategoryID: dogs.ID, Status: "lost"}, nil)
	wantError(t, "a pet with an unknown status", err, store.EINVALID, `status "lost" is not one of available, pending, sold`)

	// A replacement moves the inventory entry to the new status.
	must(s.SetStock(ctx, rex.ID, 3, store.Condition{}))(t)
	rex2 := store.Pet{ID: rex.ID, Name: "Rex II", CategoryID: cats.ID, Status: store.StatusPending}
	check(t, s.ReplacePet(ctx, &rex2, store.Condition{}))
	if got := must(s.Pet(ctx, rex.ID))(t); got != rex2 {
		t.Errorf("after ReplacePet: %+v, want %+v", got, rex2)
	}
	if got, v, _ := s.PetJSON(ctx, rex.ID); string(got) != string(rex2.AppendJSON(nil)) || v != 2 {
		t.Errorf("PetJSON after ReplacePet: %s version %d", got, v)
	}
	if it := must(s.InventoryItem(ctx, rex.ID))(t); it != (store.InventoryItem{PetID: rex.ID, Quantity: 3, Status: store.StatusPending}) {
		t.Errorf("inventory after a status change: %+v", it)
	}
	err = s.ReplacePet(ctx, &store.Pet{ID: rex.ID, Name: "Rex", CategoryID: 77}, store.Condition{})
	wantError(t, "a replacement into a missing category", err, store.EUNPROCESSABLE, "category 77 does not exist")
	err = s.ReplacePet(ctx, &store.Pet{ID: 999, Name: "Nobody", CategoryID: dogs.ID}, store.Condition{})
	wantError(t, "replacing a missing pet", err, store.ENOTFOUND, "pet 999 not found")

	// Deleting a pet deletes its inventory entry; its orders stay.
	o := store.Order{PetID: rex.ID, Quantity: 1}
	check(t, s.PlaceOrder(ctx, &o, nil))
	check(t, s.DeletePet(ctx, rex.ID, store.Condition{}))
	_, err = s.Pet(ctx, rex.ID)
	wantError(t, "a deleted pet", err, store.ENOTFOUND, fmt.Sprintf("pet %d not found", rex.ID))
	_, err = s.InventoryItem(ctx, rex.ID)
	wantError(t, "a deleted pet's inventory", err, store.ENOTFOUND, fmt.Sprintf("pet %d not found", rex.ID))
	if got := must(s.Order(ctx, o.ID))(t); got.PetID != rex.ID {
		t.Errorf("the order of a deleted pet: %+v", got)
	}
	wantError(t, "deleting a missing pet", s.DeletePet(ctx, rex.ID, store.Condition{}), store.ENOTFOUND, fmt.Sprintf("pet %d not found", rex.ID))
	// The deleted pet's stock is gone: cancelling its order gives nothing back, and works.
	check(t, s.CancelOrder(ctx, o.ID, store.Condition{}))
	// Ids are never reused.
	if next := newPet(t, s, "Next", dogs.ID, ""); next.ID <= rex.ID {
		t.Errorf("a new pet got id %d after %d was deleted", next.ID, rex.ID)
	}
}

func testCategories(t *testing.T, s store.Store) {
	dogs := newCategory(t, s, "dogs")
	if got := must(s.Category(ctx, dogs.ID))(t); got != dogs {
		t.Errorf("Category: %+v, want %+v", got, dogs)
	}
	_, err := s.Category(ctx, 999)
	wantError(t, "a missing category", err, store.ENOTFOUND, "category 999 not found")
	renamed := store.Category{ID: dogs.ID, Name: "hounds"}
	check(t, s.ReplaceCategory(ctx, &renamed, store.Condition{}))
	if got := must(s.Category(ctx, dogs.ID))(t); got != renamed {
		t.Errorf("after ReplaceCategory: %+v, want %+v", got, renamed)
	}
	wantError(t, "replacing a missing category", s.ReplaceCategory(ctx, &store.Category{ID: 999, Name: "x"}, store.Condition{}), store.ENOTFOUND, "category 999 not found")

	// A category with pets cannot go.
	rex := newPet(t, s, "Rex", dogs.ID, "")
	wantError(t, "deleting a category with a pet", s.DeleteCategory(ctx, dogs.ID, store.Condition{}), store.ECONFLICT, fmt.Sprintf("category %d still has 1 pet", dogs.ID))
	newPet(t, s, "Fido", dogs.ID, store.StatusSold)
	wantError(t, "deleting a category with pets", s.DeleteCategory(ctx, dogs.ID, store.Condition{}), store.ECONFLICT, fmt.Sprintf("category %d still has 2 pets", dogs.ID))
	// Moving a pet out counts.
	cats := newCategory(t, s, "cats")
	check(t, s.ReplacePet(ctx, &store.Pet{ID: rex.ID, Name: "Rex", CategoryID: cats.ID}, store.Condition{}))
	wantError(t, "after moving a pet out", s.DeleteCategory(ctx, dogs.ID, store.Condition{}), store.ECONFLICT, fmt.Sprintf("category %d still has 1 pet", dogs.ID))
	check(t, s.DeleteCategory(ctx, newCategory(t, s, "empty").ID, store.Condition{}))
	wantError(t, "deleting a missing category", s.DeleteCategory(ctx, 999, store.Condition{}), store.ENOTFOUND, "category 999 not found")

	// Pages of categories.
	for i := range 5 {
		newCategory(t, s, fmt.Sprintf("c%d", i))
	}
	all := storetest.Walk(t, "categories", 2, func(c store.Category) int64 { return c.ID }, func(p store.Page) ([]store.Category, int64, error) { return s.ListCategories(ctx, p) })
	if len(all) != 7 || !slices.IsSorted(all) {
		t.Errorf("categories by pages of 2: %v", all)
	}
	if page, next, err := s.ListCategories(ctx, store.Page{After: all[len(all)-1]}); err != nil || page == nil || len(page) != 0 || next != 0 {
		t.Errorf("past the last category: %v %d %v", page, next, err)
	}
}

// must2 is must for two results and an error.
func must2[A, B any](a A, b B, err error) func(*testing.T) (A, B) {
	return func(t *testing.T) (A, B) {
		t.Helper()
		check(t, err)
		return a, b
	}
}

func testInventory(t *testing.T, s store.Store) {
	dogs := newCategory(t, s, "dogs")
	rex := newPet(t, s, "Rex", dogs.ID, "")
	if it := must(s.InventoryItem(ctx, rex.ID))(t); it != (store.InventoryItem{PetID: rex.ID, Status: store.StatusAvailable}) {
		t.Errorf("a new pet's inventory: %+v", it)
	}
	if it := must(s.SetStock(ctx, rex.ID, store.MaxStock, store.Condition{}))(t); it.Quantity != store.MaxStock {
		t.Errorf("SetStock: %+v", it)
	}
	_, err := s.SetStock(ctx, rex.ID, store.MaxStock+1, store.Condition{})
	wantError(t, "too much stock", err, store.EINVALID, fmt.Sprintf("quantity must be between 0 and %d, got %d", store.MaxStock, store.MaxStock+1))
	_, err = s.SetStock(ctx, rex.ID, -1, store.Condition{})
	wantError(t, "negative stock", err, store.EINVALID, fmt.Sprintf("quantity must be between 0 and %d, got -1", store.MaxStock))
	_, err = s.SetStock(ctx, 999, 1, store.Condition{})
	wantError(t, "the stock of a missing pet", err, store.ENOTFOUND, "pet 999 not found")
	_, err = s.InventoryItem(ctx, 999)
	wantError(t, "the inventory of a missing pet", err, store.ENOTFOUND, "pet 999 not found")
	_, _, err = s.ListInventory(ctx, store.InventoryFilter{Status: "lost"})
	wantError(t, "an unknown status filter", err, store.EINVALID, `status "lost" is not one of available, pending, sold`)
}

func testOrders(t *testing.T, s store.Store) {
	dogs := newCategory(t, s, "dogs")
	rex := newPet(t, s, "Rex", dogs.ID, "")
	must(s.SetStock(ctx, rex.ID, 5, store.Condition{}))(t)

	o := store.Order{PetID: rex.ID}
	check(t, s.PlaceOrder(ctx, &o, nil))
	if o.ID <= 0 || o.Quantity != 1 || o.Complete || o.ShipDate != nil {
		t.Errorf("placed %+v: want an id and quantity 1", o)
	}
	if got := must(s.Order(ctx, o.ID))(t); !sameOrder(got, o) {
		t.Errorf("Order: %+v, want %+v", got, o)
	}
	big := store.Order{PetID: rex.ID, Quantity: 4}
	check(t, s.PlaceOrder(ctx, &big, nil))
	if it := must(s.InventoryItem(ctx, rex.ID))(t); it.Quantity != 0 {
		t.Errorf("stock after ordering 5 of 5: %d", it.Quantity)
	}
	err := s.PlaceOrder(ctx, &store.Order{PetID: rex.ID}, nil)
	wantError(t, "ordering past the stock", err, store.EINSUFFICIENTSTOCK, fmt.Sprintf("pet %d has 0 in stock, the order asks for 1", rex.ID))
	wantError(t, "an order without a pet", s.PlaceOrder(ctx, &store.Order{}, nil), store.EINVALID, "petId is required")
	err = s.PlaceOrder(ctx, &store.Order{PetID: rex.ID, Quantity: store.MaxOrderQuantity + 1}, nil)
	wantError(t, "too large an order", err, store.EINVALID, fmt.Sprintf("quantity must be between 1 and %d, got %d", store.MaxOrderQuantity, store.MaxOrderQuantity+1))
	err = s.PlaceOrder(ctx, &store.Order{PetID: rex.ID, Quantity: -1}, nil)
	wantError(t, "a negative order", err, store.EINVALID, fmt.Sprintf("quantity must be between 1 and %d, got -1", store.MaxOrderQuantity))
	wantError(t, "an order for a missing pet", s.PlaceOrder(ctx, &store.Order{PetID: 999}, nil), store.EUNPROCESSABLE, "pet 999 does not exist")
	sold := newPet(t, s, "Sold", dogs.ID, store.StatusSold)
	must(s.SetStock(ctx, sold.ID, 5, store.Condition{}))(t)
	wantError(t, "an order for a sold pet", s.PlaceOrder(ctx, &store.Order{PetID: sold.ID}, nil), store.ECONFLICT, fmt.Sprintf("pet %d is sold", sold.ID))

	// Cancelling gives the stock back; a complete order cannot be cancelled.
	check(t, s.CancelOrder(ctx, big.ID, store.Condition{}))
	if it := must(s.InventoryItem(ctx, rex.ID))(t); it.Quantity != 4 {
		t.Errorf("stock after cancelling an order of 4: %d", it.Quantity)
	}
	_, err = s.Order(ctx, big.ID)
	wantError(t, "a cancelled order", err, store.ENOTFOUND, fmt.Sprintf("order %d not found", big.ID))
	wantError(t, "cancelling a missing order", s.CancelOrder(ctx, big.ID, store.Condition{}), store.ENOTFOUND, fmt.Sprintf("order %d not found", big.ID))

	ship := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	done := true
	updated := must(s.UpdateOrder(ctx, o.ID, store.OrderUpdate{ShipDate: &ship, Complete: &done}, store.Condition{}))(t)
	if !updated.Complete || updated.ShipDate == nil || !updated.ShipDate.Equal(ship) || updated.Quantity != 1 {
		t.Errorf("UpdateOrder: %+v", updated)
	}
	if got := must(s.Order(ctx, o.ID))(t); !sameOrder(got, updated) || got.ShipDate.Location() != time.UTC {
		t.Errorf("after UpdateOrder: %+v, want %+v in UTC", got, updated)
	}
	// A nil field is left as it is.
	if got := must(s.UpdateOrder(ctx, o.ID, store.OrderUpdate{}, store.Condition{}))(t); !sameOrder(got, updated) {
		t.Errorf("an empty update: %+v", got)
	}
	_, err = s.UpdateOrder(ctx, 999, store.OrderUpdate{Complete: &done}, store.Condition{})
	wantError(t, "updating a missing order", err, store.ENOTFOUND, "order 999 not found")
	wantError(t, "cancelling a complete order", s.CancelOrder(ctx, o.ID, store.Condition{}), store.ECONFLICT, fmt.Sprintf("order %d is complete and cannot be cancelled", o.ID))

	// Cancelling never pushes the stock past MaxStock.
	late := store.Order{PetID: rex.ID, Quantity: 2}
	check(t, s.PlaceOrder(ctx, &late, nil))
	must(s.SetStock(ctx, rex.ID, store.MaxStock-1, store.Condition{}))(t)
	check(t, s.CancelOrder(ctx, late.ID, store.Condition{}))
	if it := must(s.InventoryItem(ctx, rex.ID))(t); it.Quantity != store.MaxStock {
		t.Errorf("stock after cancelling near MaxStock: %d", it.Quantity)
	}
}

// sameOrder compares the orders' fields; their versions count writes, and
// the suite checks them apart.
func sameOrder(a, b store.Order) bool {
	a.Version, b.Version = 0, 0
	if (a.ShipDate == nil) != (b.ShipDate == nil) || a.ShipDate != nil && !a.ShipDate.Equal(*b.ShipDate) {
		return false
	}
	a.ShipDate, b.ShipDate = nil, nil
	return a == b
}

// testPetVersions: a pet's version counts its writes, and a write made for
// a version the pet is no longer at (If-Match) changes nothing.
func testPetVersions(t *testing.T, s store.Store) {
	dogs := newCategory(t, s, "dogs")
	rex := newPet(t, s, "Rex", dogs.ID, "")
	if rex.Version != 1 || must(s.Pet(ctx, rex.ID))(t).Version != 1 {
		t.Fatalf("a new pet's version: %d", rex.Version)
	}
	first := store.Pet{ID: rex.ID, Name: "First", CategoryID: dogs.ID}
	check(t, s.ReplacePet(ctx, &first, store.Condition{IfMatch: []int64{1}}))
	if first.Version != 2 {
		t.Errorf("version after a replacement: %d, want 2", first.Version)
	}
	second := store.Pet{ID: rex.ID, Name: "Second", CategoryID: dogs.ID}
	err := s.ReplacePet(ctx, &second, store.Condition{IfMatch: []int64{1}})
	wantError(t, "a replacement for a stale version", err, store.EPRECONDITION,
		fmt.Sprintf("pet %d has changed since the version in If-Match; read it again, then retry with its new ETag", rex.ID))
	if got := must(s.Pet(ctx, rex.ID))(t); got.Name != "First" || got.Version != 2 {
		t.Errorf("after a stale replacement: %+v", got)
	}
	err = s.DeletePet(ctx, rex.ID, store.Condition{IfMatch: []int64{1}})
	wantError(t, "a deletion for a stale version", err, store.EPRECONDITION,
		fmt.Sprintf("pet %d has changed since the version in If-Match; read it again, then retry with its new ETag", rex.ID))
	// Any version passes If-Match: *; one of several passes.
	check(t, s.ReplacePet(ctx, &second, store.Condition{IfMatch: []int64{}}))
	check(t, s.DeletePet(ctx, rex.ID, store.Condition{IfMatch: []int64{1, 3}}))
	err = s.DeletePet(ctx, rex.ID, store.Condition{IfMatch: []int64{}})
	wantError(t, "a conditional deletion of a missing pet", err, store.ENOTFOUND, fmt.Sprintf("pet %d not found", rex.ID))
}

// testCategoryAndOrderVersions: categories and orders count their writes
// as pets do, and refuse a write for a stale version.
func testCategoryAndOrderVersions(t *testing.T, s store.Store) {
	dogs := newCategory(t, s, "dogs")
	if dogs.Version != 1 || must(s.Category(ctx, dogs.ID))(t).Version != 1 {
		t.Fatalf("a new category's version: %d", dogs.Version)
	}
	renamed := store.Category{ID: dogs.ID, Name: "Dogs"}
	check(t, s.ReplaceCategory(ctx, &renamed, store.Condition{IfMatch: []int64{1}}))
	if renamed.Version != 2 || must(s.Category(ctx, dogs.ID))(t).Version != 2 {
		t.Errorf("version after a replacement: %d", renamed.Version)
	}
	check(t, s.ReplaceCategory(ctx, &renamed, store.Condition{})) // unconditional: as before
	if renamed.Version != 3 {
		t.Errorf("version after an unconditional replacement: %d", renamed.Version)
	}
	err := s.ReplaceCategory(ctx, &store.Category{ID: dogs.ID, Name: "stale"}, store.Condition{IfMatch: []int64{2}})
	wantError(t, "a stale category replacement", err, store.EPRECONDITION,
		fmt.Sprintf("category %d has changed since the version in If-Match; read it again, then retry with its new ETag", dogs.ID))
	err = s.DeleteCategory(ctx, dogs.ID, store.Condition{IfMatch: []int64{2}})
	wantError(t, "a stale category deletion", err, store.EPRECONDITION,
		fmt.Sprintf("category %d has changed since the version in If-Match; read it again, then retry with its new ETag", dogs.ID))

	rex := newPet(t, s, "Rex", dogs.ID, "")
	must(s.SetStock(ctx, rex.ID, 5, store.Condition{}))(t)
	o := store.Order{PetID: rex.ID, Quantity: 1}
	check(t, s.PlaceOrder(ctx, &o, nil))
	if o.Version != 1 || must(s.Order(ctx, o.ID))(t).Version != 1 {
		t.Fatalf("a new order's version: %d", o.Version)
	}
	done := true
	updated := must(s.UpdateOrder(ctx, o.ID, store.OrderUpdate{Complete: &done}, store.Condition{IfMatch: []int64{1}}))(t)
	if updated.Version != 2 || !updated.Complete {
		t.Errorf("after a conditional update: %+v", updated)
	}
	_, err = s.UpdateOrder(ctx, o.ID, store.OrderUpdate{Complete: new(false)}, store.Condition{IfMatch: []int64{1}})
	wantError(t, "a stale order update", err, store.EPRECONDITION,
		fmt.Sprintf("order %d has changed since the version in If-Match; read it again, then retry with its new ETag", o.ID))
	if got := must(s.Order(ctx, o.ID))(t); !got.Complete || got.Version != 2 {
		t.Errorf("after a stale update: %+v", got)
	}
	o2 := store.Order{PetID: rex.ID, Quantity: 1}
	check(t, s.PlaceOrder(ctx, &o2, nil))
	err = s.CancelOrder(ctx, o2.ID, store.Condition{IfMatch: []int64{5}})
	wantError(t, "a stale cancellation", err, store.EPRECONDITION,
		fmt.Sprintf("order %d has changed since the version in If-Match; read it again, then retry with its new ETag", o2.ID))
	check(t, s.CancelOrder(ctx, o2.ID, store.Condition{IfMatch: []int64{1}}))
}

// testIfNoneMatchAndStockConditions: If-None-Match refuses a write of a
// record that exists (*) or is at a version it names, on every kind of
// record; an inventory entry's version is made from its quantity and
// status, and SetStock checks a condition on it.
func testIfNoneMatchAndStockConditions(t *testing.T, s store.Store) {
	dogs := newCategory(t, s, "dogs")
	rex := newPet(t, s, "Rex", dogs.ID, "")
	exists := store.Condition{IfNoneMatchAny: true}
	err := s.ReplacePet(ctx, &store.Pet{ID: rex.ID, Name: "Overwritten", CategoryID: dogs.ID}, exists)
	wantError(t, "If-None-Match: * on an existing pet", err, store.EPRECONDITION,
		fmt.Sprintf("pet %d exists, and If-None-Match: * allows the write only when it does not", rex.ID))
	err = s.ReplacePet(ctx, &store.Pet{ID: rex.ID, Name: "Overwritten", CategoryID: dogs.ID}, store.Condition{IfNoneMatch: []int64{7, 1}})
	wantError(t, "If-None-Match naming the pet's version", err, store.EPRECONDITION,
		fmt.Sprintf("pet %d is at the version in If-None-Match, which allows the write only at another", rex.ID))
	if got := must(s.Pet(ctx, rex.ID))(t); got.Name != "Rex" || got.Version != 1 {
		t.Errorf("the pet after refused writes: %+v", got)
	}
	err = s.ReplacePet(ctx, &store.Pet{ID: 999, Name: "Nobody", CategoryID: dogs.ID}, exists)
	wantError(t, "If-None-Match: * on a missing pet", err, store.ENOTFOUND, "pet 999 not found")
	renamed := store.Pet{ID: rex.ID, Name: "Rex II", CategoryID: dogs.ID}
	check(t, s.ReplacePet(ctx, &renamed, store.Condition{IfNoneMatch: []int64{7}}))
	wantError(t, "If-None-Match: * on a category", s.DeleteCategory(ctx, dogs.ID, exists), store.EPRECONDITION,
		fmt.Sprintf("category %d exists, and If-None-Match: * allows the write only when it does not", dogs.ID))

	it := must(s.InventoryItem(ctx, rex.ID))(t)
	v0 := it.Version()
	set := must(s.SetStock(ctx, rex.ID, 5, store.Condition{IfMatch: []int64{v0}}))(t)
	if set.Version() == v0 || must(s.InventoryItem(ctx, rex.ID))(t).Version() != set.Version() {
		t.Errorf("the entry's version did not follow its quantity: %d, then %d", v0, set.Version())
	}
	_, err = s.SetStock(ctx, rex.ID, 9, store.Condition{IfMatch: []int64{v0}})
	wantError(t, "a stale stock write", err, store.EPRECONDITION,
		fmt.Sprintf("the inventory entry of pet %d has changed since the version in If-Match; read it again, then retry with its new ETag", rex.ID))
	_, err = s.SetStock(ctx, rex.ID, 9, exists)
	wantError(t, "If-None-Match: * on a stock", err, store.EPRECONDITION,
		fmt.Sprintf("the inventory entry of pet %d exists, and If-None-Match: * allows the write only when it does not", rex.ID))
	if got := must(s.InventoryItem(ctx, rex.ID))(t); got.Quantity != 5 {
		t.Errorf("the stock after refused writes: %+v", got)
	}
	_, err = s.SetStock(ctx, 999, 1, store.Condition{IfMatch: []int64{}})
	wantError(t, "a conditional stock write of a missing pet", err, store.ENOTFOUND, "pet 999 not found")
	// A status change is a change of the entry too.
	sold := store.Pet{ID: rex.ID, Name: "Rex II", CategoryID: dogs.ID, Status: store.StatusSold}
	check(t, s.ReplacePet(ctx, &sold, store.Condition{}))
	if got := must(s.InventoryItem(ctx, rex.ID))(t); got.Version() == set.Version() {
		t.Errorf("the entry's version did not change with its status: %+v", got)
	}
}
