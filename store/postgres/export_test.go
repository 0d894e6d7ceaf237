package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"petstore/store"
)

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
	round := make([]*groupCall[newPet, int64], len(pets))
	for i := range pets {
		e, err := store.NewEvent(store.EventPetCreated, &pets[i])
		if err != nil {
			panic(err)
		}
		round[i] = &groupCall[newPet, int64]{ctx: ctx, in: newPet{&pets[i], afterID(e.Data)}}
	}
	db.createPets(ctx, round)
	errs := make([]error, len(pets))
	for i, c := range round {
		pets[i].ID, errs[i] = c.out, c.err
	}
	return errs
}

// PlaceRound places orders as one round of concurrent orders (group.go)
// and returns each one's error.
func PlaceRound(ctx context.Context, db *DB, orders []store.Order) []error {
	round := make([]*groupCall[newOrder, int64], len(orders))
	for i := range orders {
		e, err := store.NewEvent(store.EventOrderPlaced, &orders[i])
		if err != nil {
			panic(err)
		}
		round[i] = &groupCall[newOrder, int64]{ctx: ctx, in: newOrder{&orders[i], afterID(e.Data)}}
	}
	db.placeOrders(ctx, round)
	errs := make([]error, len(orders))
	for i, c := range round {
		orders[i].ID, errs[i] = c.out, c.err
	}
	return errs
}
