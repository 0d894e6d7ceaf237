package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"petstore/store"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
)

// counted marks the context of the writes whose statements are counted,
// so that the instance's own polls are not.
type counted struct{}

// statementCounter counts the statements, batches and prepares sent with
// a counted context: each is a round trip to the server.
type statementCounter struct{ n atomic.Int64 }

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if ctx.Value(counted{}) != nil {
		c.n.Add(1)
	}
	return ctx
}

func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *statementCounter) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	if ctx.Value(counted{}) != nil {
		c.n.Add(1)
	}
	return ctx
}

func (c *statementCounter) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

func (c *statementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	if ctx.Value(counted{}) != nil {
		c.n.Add(1)
	}
	return ctx
}

func (c *statementCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *statementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// tracedDB opens a store on the database at url whose statements sent
// with ctx counter counts.
func tracedDB(t *testing.T, url string) (db *postgres.DB, counter *statementCounter, ctx context.Context) {
	t.Helper()
	counter = &statementCounter{}
	db, err := postgres.Connect(context.Background(), url, store.Options{}, postgres.WithTracer(postgres.Config{}, counter))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, counter, context.WithValue(context.Background(), counted{}, true)
}

var _ interface {
	pgx.QueryTracer
	pgx.PrepareTracer
	pgx.BatchTracer
} = (*statementCounter)(nil)

// TestOneRoundTripPerWrite: each write of pets, categories, orders and
// stock that carries no If-Match or Idempotency-Key is one statement,
// so one round trip (BEGIN and COMMIT would be two more), once its
// statement is prepared on the connection; its event commits with it.
func TestOneRoundTripPerWrite(t *testing.T) {
	db, counter, ctx := tracedDB(t, pgtest.URL(t))
	var cat store.Category
	var pet store.Pet
	var order store.Order
	writes := []struct {
		name string
		// write runs the write once; a second run must succeed too (the
		// first one prepares the statement).
		write func(i int) error
	}{
		{"CreateCategory", func(int) error {
			cat = store.Category{Name: "dogs"}
			return db.CreateCategory(ctx, &cat, nil)
		}},
		{"ReplaceCategory", func(int) error { cat.Description = "barks"; return db.ReplaceCategory(ctx, &cat, store.Condition{}) }},
		{"CreatePet", func(int) error {
			pet = store.Pet{Name: "Rex", CategoryID: cat.ID, Status: store.StatusAvailable}
			return db.CreatePet(ctx, &pet, nil)
		}},
		{"ReplacePet", func(int) error { pet.Name = "Rexy"; return db.ReplacePet(ctx, &pet, store.Condition{}) }},
		{"SetStock", func(i int) error { _, err := db.SetStock(ctx, pet.ID, 10+i, store.Condition{}); return err }},
		{"PlaceOrder", func(int) error {
			order = store.Order{PetID: pet.ID, Quantity: 1}
			return db.PlaceOrder(ctx, &order, nil)
		}},
		{"CancelOrder", func(int) error { return db.CancelOrder(ctx, order.ID, store.Condition{}) }},
		{"DeletePet", func(int) error { return db.DeletePet(ctx, pet.ID, store.Condition{}) }},
		{"DeleteCategory", func(int) error { return db.DeleteCategory(ctx, cat.ID, store.Condition{}) }},
	}
	for round := range 2 {
		for _, w := range writes {
			before := counter.n.Load()
			if err := w.write(round); err != nil {
				t.Fatalf("%s, round %d: %v", w.name, round+1, err)
			}
			if n := counter.n.Load() - before; round == 1 && n != 1 {
				t.Errorf("%s: %d round trips, want 1", w.name, n)
			}
		}
	}
	// Each of them recorded its event in its statement.
	events, err := db.Events(context.Background(), store.EventFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	// PlaceOrder and CancelOrder record two: the stock's and the order's.
	if want := 2 * (len(writes) + 2); len(events) != want {
		t.Errorf("%d events, want %d", len(events), want)
	}
}

// TestCreatesTogetherAreOneStatement: a round of concurrent creates
// (group.go) is one statement, and each create gets its own answer. When
// a category goes between the statement's check and its insert (its
// delete holds the row while the round runs), the round falls back to one
// statement per pet, and only that category's pets are refused.
func TestCreatesTogetherAreOneStatement(t *testing.T) {
	url := pgtest.URL(t)
	db, counter, ctx := tracedDB(t, url)
	dogs, cats := store.Category{Name: "dogs"}, store.Category{Name: "cats"}
	for _, c := range []*store.Category{&dogs, &cats} {
		if err := db.CreateCategory(ctx, c, nil); err != nil {
			t.Fatal(err)
		}
	}
	round := func(n int, categories ...int64) ([]store.Pet, []error) {
		pets := make([]store.Pet, n)
		for i := range pets {
			pets[i] = store.Pet{Name: fmt.Sprintf("pet %d", i), CategoryID: categories[i%len(categories)], Status: store.StatusAvailable}
		}
		return pets, postgres.CreateRound(ctx, db, pets)
	}
	check := func(pets []store.Pet, errs []error, missing int64) {
		t.Helper()
		for i, p := range pets {
			if p.CategoryID == missing {
				if errs[i] == nil || store.ErrorCode(errs[i]) != store.EUNPROCESSABLE {
					t.Errorf("pet %d in the missing category %d: %v", i, missing, errs[i])
				}
				continue
			}
			got, err := db.Pet(ctx, p.ID)
			if errs[i] != nil || err != nil || got.Name != p.Name || got.CategoryID != p.CategoryID {
				t.Errorf("pet %d: %v; stored as %+v (%v)", i, errs[i], got, err)
			}
		}
	}

	round(2, dogs.ID) // prepares the statement on a connection
	before := counter.n.Load()
	pets, errs := round(50, dogs.ID)
	if n := counter.n.Load() - before; n != 1 {
		t.Errorf("a round of 50 creates: %d round trips, want 1", n)
	}
	check(pets, errs, 0)
	// A pet in a missing category is left out, then refused on its own.
	pets, errs = round(50, dogs.ID, 999)
	check(pets, errs, 999)

	// A name the database cannot store fails only its own create.
	a := store.StatusAvailable
	pets = []store.Pet{{Name: "Rex", CategoryID: dogs.ID, Status: a}, {Name: "R\x00x", CategoryID: dogs.ID, Status: a}, {Name: "Max", CategoryID: dogs.ID, Status: a}}
	errs = postgres.CreateRound(ctx, db, pets)
	if errs[0] != nil || errs[2] != nil || store.ErrorCode(errs[1]) != store.EINVALID {
		t.Errorf("a round with a NUL in one name: %v", errs)
	}
	check(pets[0:1], errs[0:1], 0)
	check(pets[2:], errs[2:], 0)

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM categories WHERE id = $1`, cats.ID); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		pets, errs = round(20, dogs.ID, cats.ID)
	}()
	// The round waits for the delete's row lock once it has checked the
	// categories.
	// A session of this test's database waits for a lock (pg_locks is the
	// whole cluster's, where other tests run).
	probe, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close(ctx)
	for blocked := false; !blocked; {
		err := probe.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&blocked)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
			t.Fatal("the round ended before the category's delete committed")
		default:
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	check(pets, errs, cats.ID)
}

// TestOrdersTogether: a round of concurrent orders (group.go) is one
// statement while the stock lasts. Each pet's orders are taken in the
// round's order; one that does not fit, and those of its pet after it,
// are placed alone after the round, so that each is taken or refused as
// if alone; the stock's events say what each order left.
func TestOrdersTogether(t *testing.T) {
	db, counter, ctx := tracedDB(t, pgtest.URL(t))
	dogs := store.Category{Name: "dogs"}
	if err := db.CreateCategory(ctx, &dogs, nil); err != nil {
		t.Fatal(err)
	}
	pet := func(status store.PetStatus, stock int) int64 {
		p := store.Pet{Name: "Rex", CategoryID: dogs.ID, Status: status}
		if err := db.CreatePet(ctx, &p, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := db.SetStock(ctx, p.ID, stock, store.Condition{}); err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	rex, max, sold := pet(store.StatusAvailable, 5), pet(store.StatusAvailable, 100), pet(store.StatusSold, 10)
	_, before := eventsSince(t, db, store.EventID{})

	postgres.PlaceRound(ctx, db, []store.Order{{PetID: max, Quantity: 1}, {PetID: max, Quantity: 1}}) // prepares
	start := counter.n.Load()
	orders := []store.Order{{PetID: max, Quantity: 10}, {PetID: max, Quantity: 20}, {PetID: max, Quantity: 30}}
	for i, err := range postgres.PlaceRound(ctx, db, orders) {
		if err != nil || orders[i].ID == 0 {
			t.Fatalf("order %d: %v", i, err)
		}
	}
	if n := counter.n.Load() - start; n != 1 {
		t.Errorf("a round of orders that all fit: %d round trips, want 1", n)
	}

	orders = []store.Order{{PetID: rex, Quantity: 2}, {PetID: sold, Quantity: 1}, {PetID: rex, Quantity: 2}, {PetID: rex, Quantity: 3}, {PetID: 999, Quantity: 1}, {PetID: rex, Quantity: 1}}
	errs := postgres.PlaceRound(ctx, db, orders)
	want := []string{"", "conflict: pet 3 is sold", "", "insufficient_stock: pet 1 has 1 in stock, the order asks for 3", "unprocessable: pet 999 does not exist", ""}
	for i, err := range errs {
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != want[i] || (err == nil) != (orders[i].ID != 0) {
			t.Errorf("order %d: %q (id %d), want %q", i, got, orders[i].ID, want[i])
		}
		if err == nil {
			if o, err := db.Order(ctx, orders[i].ID); err != nil || o.PetID != orders[i].PetID || o.Quantity != orders[i].Quantity {
				t.Errorf("order %d stored as %+v (%v)", i, o, err)
			}
		}
	}
	if it, err := db.InventoryItem(ctx, rex); err != nil || it.Quantity != 0 {
		t.Errorf("rex's stock after the round: %+v (%v), want 0", it, err)
	}
	if it, err := db.InventoryItem(ctx, max); err != nil || it.Quantity != 38 {
		t.Errorf("max's stock: %+v (%v), want 38", it, err)
	}
	events, _ := eventsSince(t, db, before)
	var left []string
	for _, e := range events {
		if e.Type == store.EventInventory {
			left = append(left, string(e.Data))
		}
	}
	wantLeft := []string{
		`{"petId":2,"quantity":99,"status":"available"}`, `{"petId":2,"quantity":98,"status":"available"}`,
		`{"petId":2,"quantity":88,"status":"available"}`, `{"petId":2,"quantity":68,"status":"available"}`, `{"petId":2,"quantity":38,"status":"available"}`,
		`{"petId":1,"quantity":3,"status":"available"}`, `{"petId":1,"quantity":1,"status":"available"}`, `{"petId":1,"quantity":0,"status":"available"}`,
	}
	if !slices.Equal(left, wantLeft) {
		t.Errorf("the stock's events:\n%s\nwant\n%s", strings.Join(left, "\n"), strings.Join(wantLeft, "\n"))
	}
}

// eventsSince returns every event after after, and the last one's id.
func eventsSince(t *testing.T, db *postgres.DB, after store.EventID) ([]store.Event, store.EventID) {
	t.Helper()
	var all []store.Event
	for {
		es, err := db.Events(context.Background(), store.EventFilter{After: after, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 {
			return all, after
		}
		all = append(all, es...)
		after = es[len(es)-1].ID
	}
}
