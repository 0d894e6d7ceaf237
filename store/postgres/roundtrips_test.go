package postgres_test

import (
	"context"
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
	counter := &statementCounter{}
	db, err := postgres.Connect(context.Background(), pgtest.URL(t), store.Options{}, postgres.WithTracer(postgres.Config{}, counter))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.WithValue(context.Background(), counted{}, true)
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
			return db.CreateCategory(ctx, &cat)
		}},
		{"ReplaceCategory", func(int) error { cat.Description = "barks"; return db.ReplaceCategory(ctx, &cat) }},
		{"CreatePet", func(int) error {
			pet = store.Pet{Name: "Rex", CategoryID: cat.ID, Status: store.StatusAvailable}
			return db.CreatePet(ctx, &pet)
		}},
		{"ReplacePet", func(int) error { pet.Name = "Rexy"; return db.ReplacePet(ctx, &pet) }},
		{"SetStock", func(i int) error { _, err := db.SetStock(ctx, pet.ID, 10+i); return err }},
		{"PlaceOrder", func(int) error {
			order = store.Order{PetID: pet.ID, Quantity: 1}
			return db.PlaceOrder(ctx, &order)
		}},
		{"CancelOrder", func(int) error { return db.CancelOrder(ctx, order.ID) }},
		{"DeletePet", func(int) error { return db.DeletePet(ctx, pet.ID) }},
		{"DeleteCategory", func(int) error { return db.DeleteCategory(ctx, cat.ID) }},
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
