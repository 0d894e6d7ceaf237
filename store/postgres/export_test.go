package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"petstore/store"
)

// ImportLock is the advisory lock that a move into the database holds.
const ImportLock = importLock

// HoldCatchUp keeps db from catching up with other instances' changes
// until release is called: a test can then make several changes "before
// the next poll" for certain.
func HoldCatchUp(db *DB) (release func()) {
	db.cache.catching.Lock()
	return db.cache.catching.Unlock
}

// WithTracer is c with a tracer that sees every statement sent.
func WithTracer(c Config, t pgx.QueryTracer) Config {
	c.tracer = t
	return c
}

// CreateRound creates pets as one round of concurrent creates (group.go)
// and returns each one's error.
func CreateRound(ctx context.Context, db *DB, pets []store.Pet) []error {
	return runRound(ctx, db, db.petCreates, pets)
}

// PlaceRound places orders as one round of concurrent orders (group.go)
// and returns each one's error.
func PlaceRound(ctx context.Context, db *DB, orders []store.Order) []error {
	return runRound(ctx, db, db.orderCreates, orders)
}

func runRound[T any](ctx context.Context, db *DB, c *creates[T], recs []T) []error {
	round := make([]*groupCall[newRecord[T], int64], len(recs))
	for i := range recs {
		e, err := store.NewEvent(c.event, &recs[i])
		if err != nil {
			panic(err)
		}
		round[i] = &groupCall[newRecord[T], int64]{ctx: ctx, in: newRecord[T]{&recs[i], afterID(e.Data)}}
	}
	c.runRound(ctx, db, round)
	errs := make([]error, len(recs))
	for i, call := range round {
		c.set(&recs[i], call.out)
		errs[i] = call.err
	}
	return errs
}

// NewEventsQuery is the query every instance's engine runs at each poll
// to learn whether there are events to fan out.
const NewEventsQuery = newEventsQuery

// CatchUp runs one catch-up with the other instances' changes now, as the
// watcher's next poll would.
func CatchUp(db *DB) error { return db.catchUp(context.Background()) }

// DefaultMaxConns is the size of a store's pool unless told otherwise.
const DefaultMaxConns = defaultMaxConns

// CreatePetAlone adds a pet as CreatePet would without rounds: its own
// statement (createPetSQL, the one a round of one sends) on pool.
func CreatePetAlone(ctx context.Context, db *DB, pool *pgxpool.Pool, p *store.Pet) error {
	in, e, err := withEvent(*p, store.NormalizePet, store.EventPetCreated)
	if err != nil {
		return err
	}
	id, err := db.createPet(ctx, pool, newRecord[store.Pet]{&in, afterID(e.Data)})
	if err != nil {
		return err
	}
	setPetID(&in, id)
	*p = in
	return nil
}
