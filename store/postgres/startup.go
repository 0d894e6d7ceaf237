package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"petstore/store"
)

// startOnce is start-up's first attempt. In the background mode it first
// waits for the database to answer a trivial statement, within one
// deadline for the whole wait, so that a database that accepts and never
// answers delays the listeners by that much, no more.
func (db *DB) startOnce(ctx context.Context, background bool) error {
	if !background {
		return db.start(ctx)
	}
	wait := time.Duration(db.pool.hosts) * db.pool.t.Connect
	rctx, cancel := context.WithTimeout(context.WithValue(ctx, startupKey{}, true), wait)
	_, err := db.pool.Exec(rctx, `SELECT 1`)
	cancel()
	if err != nil {
		db.notReached(err)
		msg := fmt.Sprintf("the database did not answer within %v, start-up's one wait for it (the connect timeout for each of the URL's %d hosts)", wait, db.pool.hosts)
		if !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) {
			// It answered, with a refusal: no wait was spent.
			msg = "the database cannot be reached: " + reason(err, db.pool.t)
		}
		db.log.Warn(msg+"; serving without it (/readyz answers 503 until it is reached) and retrying in the background",
			"database", db.pool.name, "err", err)
		return err
	}
	if err = db.start(ctx); err != nil {
		db.log.Warn(fmt.Sprintf("the database answered, but bringing its schema up to date and loading the credentials failed within %v; serving without it (/readyz answers 503 until it is done) and retrying in the background", db.pool.t.startBudget()),
			"database", db.pool.name, "err", err)
	}
	return err
}

// startupKey marks the context of start-up, whose queries go through
// before the store is ready.
type startupKey struct{}

// start brings the schema up to date and loads what the store caches.
func (db *DB) start(ctx context.Context) error {
	t := db.pool.t
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, startupKey{}, true), t.startBudget())
	defer cancel()
	if err := db.migrate(ctx); err != nil {
		return fmt.Errorf("migrating the database schema: %w", err)
	}
	if db.marks.Path() != "" {
		// The database's identity, made at its first start and carried by
		// its dumps (Marks.SetID).
		var id []byte
		err := db.pool.QueryRow(ctx, `INSERT INTO meta (key, value) VALUES ('store_id', $1)
			ON CONFLICT (key) DO UPDATE SET value = meta.value RETURNING value`, []byte(rand.Text())).Scan(&id)
		if err == nil {
			err = db.marks.SetID(string(id))
		}
		if err != nil {
			return err
		}
	}
	// The first catch-up loads the credentials whatever the counts say.
	return db.catchUp(ctx)
}

func (db *DB) started(bg context.Context) {
	db.pool.health.mu.Lock()
	db.pool.health.initErr = nil
	db.pool.health.mu.Unlock()
	close(db.ready)
	db.background.Go(func() { db.watch(bg) })
}

// retryStart retries start-up with back-off until it succeeds or the store
// is closed.
func (db *DB) retryStart(bg context.Context) {
	wait := 250 * time.Millisecond
	for {
		select {
		case <-bg.Done():
			return
		case <-time.After(wait):
		}
		err := db.start(bg)
		if err == nil {
			db.log.Info("the database is reached: the store is ready", "database", db.pool.name)
			db.started(bg)
			// Whoever failed to read while it was unreachable reads now.
			db.cache.mu.RLock()
			listeners := db.cache.listeners
			db.cache.mu.RUnlock()
			for _, fn := range listeners {
				fn()
			}
			return
		}
		wait = min(2*wait, 10*time.Second)
		msg := fmt.Sprintf("the database cannot be reached (%s); retrying in %v", store.ErrorMessage(err), wait)
		if store.ErrorCode(err) == store.EINTERNAL {
			msg = fmt.Sprintf("the database cannot be reached; retrying in %v", wait)
		}
		db.notReached(err)
		db.log.Warn(msg, "database", db.pool.name, "err", err)
	}
}

// notReached makes err the reason that every request and /readyz give
// until start-up succeeds.
func (db *DB) notReached(err error) {
	why := reason(err, db.pool.t)
	if store.ErrorCode(err) == store.EUNAVAILABLE {
		why = store.ErrorMessage(err)
	}
	db.pool.health.mu.Lock()
	db.pool.health.initErr = store.ErrorWithCause(err, store.EUNAVAILABLE, "the database has not been reached since start: %s", why)
	db.pool.health.mu.Unlock()
}

// WaitReady waits until start-up has succeeded, or ctx ends.
func (db *DB) WaitReady(ctx context.Context) error {
	select {
	case <-db.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
