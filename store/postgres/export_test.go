package postgres

import "github.com/jackc/pgx/v5"

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
