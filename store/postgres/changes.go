package postgres

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// What an instance caches, and how it learns that another instance changed
// it. The admin token's hash is held in memory, as the bbolt store does
// (API keys are looked up in the database: credentials.go). Every
// write that changes them, or domains, settings or the project, bumps the
// one-row changes table in its transaction, with the kind of change; each
// instance polls that row, reloads the credentials when they changed, and
// tells its listeners of every change. Polling a row is plain SQL that
// every Postgres-compatible database runs, where LISTEN/NOTIFY is not; at
// pollInterval it costs a few tiny queries a second per instance and
// keeps every instance within a second of every change.
const pollInterval = 250 * time.Millisecond

type cache struct {
	mu sync.RWMutex
	// version is the changes row's count of every change, as of the last
	// notice to the listeners.
	version int64
	// credentials is its count of credential changes as of keys and
	// adminHash.
	credentials int64
	adminHash   []byte
	// identity is the database's system identifier and timeline;
	// noIdentity is set when the role may not read them.
	identity   string
	noIdentity atomic.Bool
	listeners  []func()
}

// The kinds of change, as the changes row counts them: every change in
// version, and those that leave the credentials alone in other_version too
// (migrations/0002_change_kinds.sql).
const (
	// credentialsChange changes API keys or the admin token.
	credentialsChange = `UPDATE changes SET version = version + 1 WHERE id = 1`
	// otherChange leaves the credentials alone: domains, settings, the
	// project.
	otherChange = `UPDATE changes SET version = version + 1, other_version = other_version + 1 WHERE id = 1`
)

// changeTx runs fn in a transaction that also counts the change (one of
// the kinds above) for the other instances, then catches this instance up
// at once. The change is committed when that runs: a catch-up that fails
// (the database gone for a moment, the caller's context ended) is not the
// write's failure, and the watcher's next poll catches up instead.
func (db *DB) changeTx(ctx context.Context, kind string, fn func(pgx.Tx) error) error {
	err := db.tx(ctx, func(tx pgx.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, kind)
		return err
	})
	if err != nil {
		return err
	}
	_ = db.catchUp(context.WithoutCancel(ctx))
	return nil
}

// OnChange registers fn to run after this or another instance changed API
// keys, the admin token, domains, settings or the project. It runs on the
// watcher's goroutine; it must not block for long.
func (db *DB) OnChange(fn func()) {
	db.cache.mu.Lock()
	db.cache.listeners = append(db.cache.listeners, fn)
	db.cache.mu.Unlock()
}

// watch catches up with the changes row every pollInterval until ctx ends.
// A failed poll (the database away) is retried at the next tick; the pool
// reconnects by itself.
func (db *DB) watch(ctx context.Context) {
	everyTick(ctx, pollInterval, func() { _ = db.catchUp(ctx) })
}

// everyTick calls fn every interval until ctx ends.
func everyTick(ctx context.Context, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// catchUp reloads the credentials when they changed since they were
// loaded, then tells the listeners when anything changed since they were
// last told. A count that went backwards, or a database that is another
// one (its system identifier or timeline changed: a restore, a
// point-in-time recovery, a failover to a replica that had not seen every
// change), reloads everything and tells the listeners.
func (db *DB) catchUp(ctx context.Context) error {
	var version, credentials int64
	var identity string
	query := `SELECT version, version - other_version,
		(SELECT system_identifier::text FROM pg_control_system()) || '/' || (SELECT timeline_id::text FROM pg_control_checkpoint())
		FROM changes WHERE id = 1`
	if db.cache.noIdentity.Load() {
		query = `SELECT version, version - other_version, '' FROM changes WHERE id = 1`
	}
	err := db.pool.QueryRow(ctx, query).Scan(&version, &credentials, &identity)
	if violates(err, "42501") && !db.cache.noIdentity.Swap(true) {
		// A role that may not read the control data: the counts alone.
		db.log.Warn("the database's identity (system identifier, timeline) cannot be read by this role: a restore or failover is found from the change counter alone; GRANT pg_monitor to the role to find it from the identity too", "database", db.pool.name)
		return db.catchUp(ctx)
	}
	if err != nil {
		return err
	}
	db.cache.mu.Lock()
	if version < db.cache.version || credentials < db.cache.credentials || (db.cache.identity != "" && identity != db.cache.identity) {
		db.log.Warn("the database went back in time or is another one (a restore, a recovery or a failover): reloading what this instance caches",
			"database", db.pool.name, "identity", identity, "was", db.cache.identity, "version", version, "was_version", db.cache.version)
		db.cache.version, db.cache.credentials = -1, -1
	}
	db.cache.identity = identity
	stale := credentials != db.cache.credentials
	db.cache.mu.Unlock()
	if stale {
		if err := db.loadCredentials(ctx); err != nil {
			return err
		}
	}
	db.cache.mu.Lock()
	if version <= db.cache.version {
		db.cache.mu.Unlock()
		return nil // no change, or a newer catch-up told the listeners
	}
	db.cache.version = version
	listeners := db.cache.listeners
	db.cache.mu.Unlock()
	for _, fn := range listeners {
		fn()
	}
	return nil
}

// loadCredentials reads the admin token's hash, with the count of
// credential changes it is as of, into the cache.
func (db *DB) loadCredentials(ctx context.Context) error {
	var (
		credentials int64
		hash        []byte
	)
	err := db.txWith(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT version - other_version FROM changes WHERE id = 1`).Scan(&credentials); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `SELECT value FROM meta WHERE key = 'admin_token_sha256'`).Scan(&hash)
		if err != nil && err != pgx.ErrNoRows {
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	db.cache.mu.Lock()
	defer db.cache.mu.Unlock()
	if credentials < db.cache.credentials {
		return nil // a newer load got here first
	}
	db.cache.credentials, db.cache.adminHash = credentials, hash
	return nil
}
