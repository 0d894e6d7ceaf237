package store

import (
	"context"
	"time"
)

// PoolStats describes a store's pool of database connections (PostgreSQL),
// for the service's metrics.
type PoolStats struct {
	InUse, Idle, Max int
	// Waiting is the requests waiting for a connection now.
	Waiting int
	// Acquires counts the connections handed out; AcquireWait is the time
	// spent waiting for them; AcquireTimeouts the waits that ran out.
	Acquires        int64
	AcquireWait     time.Duration
	AcquireTimeouts int64
	// Unavailable counts the database_unavailable errors.
	Unavailable int64
	// ErrorsByClass counts the database's errors by SQLSTATE class (its
	// first two characters; "08" also for connections lost on the way).
	ErrorsByClass map[string]int64
}

type poolShareKey struct{}

// WithPoolShare returns ctx for work that counts against the share of the
// database connections named name, so that a locked or slow table cannot
// hold every connection and starve the requests that do not need it.
func WithPoolShare(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, poolShareKey{}, name)
}

// PoolShareOf is the name of ctx's share of the connections, "" for none.
func PoolShareOf(ctx context.Context) string {
	name, _ := ctx.Value(poolShareKey{}).(string)
	return name
}
