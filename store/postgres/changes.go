package postgres

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"petstore/store"
)

// What an instance caches, and how it learns that another instance changed
// it. Authenticating a request must not cost a query, so API keys and the
// admin token's hash are held in memory, as the bbolt store does. Every
// write that changes them (or domains, settings, the project) bumps the
// one-row changes table in its transaction; each instance polls that row
// and reloads when it moves. Polling a row is plain SQL that every
// Postgres-compatible database runs, where LISTEN/NOTIFY is not; at
// pollInterval it costs a few tiny queries a second per instance and
// keeps every instance within a second of every change.
const pollInterval = 250 * time.Millisecond

type cache struct {
	mu        sync.RWMutex
	version   int64
	keys      map[[32]byte]store.APIKey
	adminHash []byte
	listeners []func()
}

// bump records a change, in the transaction that makes it.
func bump(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `UPDATE changes SET version = version + 1 WHERE id = 1`)
	return err
}

// OnChange registers fn to run after this or another instance changed API
// keys, the admin token, domains, settings or the project. It runs on the
// watcher's goroutine; it must not block for long.
func (db *DB) OnChange(fn func()) {
	db.cache.mu.Lock()
	db.cache.listeners = append(db.cache.listeners, fn)
	db.cache.mu.Unlock()
}

// watch polls the changes row until ctx ends, reloading on every move. A
// failed poll (the database away) is retried at the next tick; the pool
// reconnects by itself.
func (db *DB) watch(ctx context.Context) {
	everyTick(ctx, pollInterval, func() { _ = db.reloadIfChanged(ctx) })
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

// reloadIfChanged reloads the cache when the changes row moved since the
// last load, and tells the listeners.
func (db *DB) reloadIfChanged(ctx context.Context) error {
	var v int64
	if err := db.pool.QueryRow(ctx, `SELECT version FROM changes WHERE id = 1`).Scan(&v); err != nil {
		return err
	}
	db.cache.mu.RLock()
	same := v == db.cache.version
	db.cache.mu.RUnlock()
	if same {
		return nil
	}
	return db.reload(ctx)
}

// reload reads what the cache holds, as of one snapshot.
func (db *DB) reload(ctx context.Context) error {
	var (
		version int64
		hash    []byte
		keys    = map[[32]byte]store.APIKey{}
	)
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT version FROM changes WHERE id = 1`).Scan(&version); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `SELECT value FROM meta WHERE key = 'admin_token_sha256'`).Scan(&hash)
		if err != nil && err != pgx.ErrNoRows {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id, name, prefix, created_at, sha256 FROM api_keys`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k store.APIKey
			var h []byte
			if err := rows.Scan(&k.ID, &k.Name, &k.Prefix, &k.CreatedAt, &h); err != nil {
				return err
			}
			if len(h) == sha256.Size {
				k.CreatedAt = k.CreatedAt.UTC()
				keys[[32]byte(h)] = k
			}
		}
		return rows.Err()
	})
	if err != nil {
		return err
	}
	db.cache.mu.Lock()
	if version < db.cache.version {
		db.cache.mu.Unlock()
		return nil // a newer load got here first
	}
	db.cache.version, db.cache.keys, db.cache.adminHash = version, keys, hash
	listeners := db.cache.listeners
	db.cache.mu.Unlock()
	for _, fn := range listeners {
		fn()
	}
	return nil
}
