package postgres

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"petstore/store"
)

// Every write that changes the credentials, domains, settings or the
// project bumps the one-row changes table; each instance polls that row,
// reloads the credentials when they changed, and tells its listeners.
// Polling is plain SQL that every Postgres-compatible database runs, where
// LISTEN/NOTIFY is not.
const pollInterval = 250 * time.Millisecond

type cache struct {
	// catching serialises catch-ups, which compare with what the last saw.
	catching sync.Mutex
	mu       sync.RWMutex
	// seen is the changes row as of the last catch-up, if known.
	seen  changesRow
	known bool
	// adminHash is the admin token's hash, as of seen.
	adminHash  []byte
	noIdentity atomic.Bool
	listeners  []func()
	// rewinding: a rewind found, not yet handled (catching guards it).
	rewinding bool
	// noWas is set once EventCursor found no event with the id of another
	// database: only an import writes one, before any instance serves; a
	// reload (after a restore) clears it.
	noWas atomic.Bool
}

// changesRow is the changes row as an instance reads it, with the
// database's identity (system identifier and timeline; empty when the role
// may not read it).
type changesRow struct {
	version, credentials int64
	stamp, prevStamp     int64
	identity             string
}

// The kinds of change, as the changes row counts them
// (migrations/0002_change_kinds.sql): of API keys or the admin token, and
// of the rest.
const (
	credentialsChange = `UPDATE changes SET version = version + 1, prev_stamp = stamp, stamp = $1 WHERE id = 1`
	otherChange       = `UPDATE changes SET version = version + 1, other_version = other_version + 1, prev_stamp = stamp, stamp = $1 WHERE id = 1`
)

// changeTx runs fn in a transaction that also counts the change for the
// other instances, then catches this instance up at once. A catch-up that
// fails is not the write's failure: the next poll catches up instead.
func (db *DB) changeTx(ctx context.Context, kind string, fn func(pgx.Tx) error) error {
	err := db.tx(ctx, func(tx pgx.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		// A random stamp, that a rewound row followed by new changes
		// cannot bring back (migrations/0005_change_stamps.sql).
		_, err := tx.Exec(ctx, kind, rand.Int64())
		return err
	})
	if err != nil {
		return err
	}
	_ = db.catchUp(context.WithoutCancel(ctx))
	return nil
}

func (db *DB) OnChange(fn func()) {
	db.cache.mu.Lock()
	db.cache.listeners = append(db.cache.listeners, fn)
	db.cache.mu.Unlock()
}

// watch catches up with the changes row every pollInterval until ctx ends.
func (db *DB) watch(ctx context.Context) {
	var failures store.RepeatedFailure
	store.EveryTick(ctx, pollInterval, func() {
		if err := db.catchUp(ctx); err != nil && ctx.Err() == nil {
			failures.Failed(db.log, "reading other instances' changes", "database", db.pool.name, "err", err)
		} else if err == nil {
			failures.Succeeded()
		}
	})
}

// catchUp reloads the credentials when they changed, then tells the
// listeners when anything changed. A history that does not continue the
// one this instance saw (a restore, a recovery, a failover to a replica
// that had not seen every change), or that cannot be checked (several
// changes since the last catch-up), reloads everything.
func (db *DB) catchUp(ctx context.Context) error {
	c := &db.cache
	c.catching.Lock()
	defer c.catching.Unlock()
	// The marks as of before the poll: an id given out while it runs
	// is above what it reads, and no sign of a rewind.
	marks := db.marks.LastIDs()
	now, last, horizon, err := db.readChanges(ctx)
	if err != nil {
		return err
	}
	c.mu.RLock()
	was, known := c.seen, c.known
	c.mu.RUnlock()
	// A sequence below the marks is a rewind too, the only sign of one
	// that took away no change of the changes row.
	back := false
	for i, s := range sequences {
		back = back || last[i] < marks[s.res]
	}
	if known && now == was && !back && !c.rewinding {
		db.observe(last, horizon)
		return nil
	}
	reload := !known || now.credentials != was.credentials
	if back || (known && rewound(was, now)) {
		db.log.Warn("the database went back in time or is another one (a restore, a recovery or a failover): reloading what this instance caches",
			"database", db.pool.name, "identity", now.identity, "was", was.identity, "version", now.version, "was_version", was.version, "sequences_went_back", back)
		reload = true
		c.rewinding = true
	} else if known && !(now.version == was.version+1 && now.prevStamp == was.stamp) {
		// Several changes since the last catch-up: nothing cached is
		// trusted.
		reload = true
	}
	if c.rewinding {
		if err := db.handleRewind(ctx, last); err != nil {
			db.log.Warn("the database went back in time, and raising its sequences past the ids given out failed: retrying at the next poll", "database", db.pool.name, "err", err)
			return err
		}
		c.rewinding = false
		// What the handling changed is read back below.
		if now, last, horizon, err = db.readChanges(ctx); err != nil {
			return err
		}
	}
	if reload {
		c.noWas.Store(false)
		if err := db.loadRevocations(ctx); err != nil {
			return err
		}
		loaded, hash, err := db.loadCredentials(ctx)
		if err != nil {
			return err
		}
		loaded.identity = now.identity
		now = loaded
		db.keys.forget()
		c.mu.Lock()
		c.adminHash = hash
	} else {
		c.mu.Lock()
	}
	c.seen, c.known = now, true
	listeners := c.listeners
	c.mu.Unlock()
	db.observe(last, horizon)
	for _, fn := range listeners {
		fn()
	}
	return nil
}

// rewound says that the changes row now is not a later state of the one
// seen: the database went back in time or is another one.
func rewound(seen, now changesRow) bool {
	switch {
	case seen.identity != "" && now.identity != seen.identity:
		return true
	case now.version < seen.version || now.credentials < seen.credentials:
		return true
	case now.version == seen.version:
		return now.stamp != seen.stamp
	case now.version == seen.version+1:
		// One change: it replaced the stamp seen, or it is another
		// history (a binary older than the stamps leaves them alone).
		return now.prevStamp != seen.stamp && now.stamp != seen.stamp
	}
	return false
}

func (db *DB) readChanges(ctx context.Context) (changesRow, lastIDs, int64, error) {
	var r changesRow
	var last []int64
	var horizon int64
	query := `SELECT version, version - other_version, stamp, prev_stamp,
		(SELECT system_identifier::text FROM pg_control_system()) || '/' || (SELECT timeline_id::text FROM pg_control_checkpoint()), ` + lastIDsSQL + `
		FROM changes WHERE id = 1`
	if db.cache.noIdentity.Load() {
		query = `SELECT version, version - other_version, stamp, prev_stamp, '', ` + lastIDsSQL + ` FROM changes WHERE id = 1`
	}
	err := db.pool.QueryRow(ctx, query).Scan(&r.version, &r.credentials, &r.stamp, &r.prevStamp, &r.identity, &last, &horizon)
	if violates(err, "42501") && !db.cache.noIdentity.Swap(true) {
		// A role that may not read the control data: the row alone.
		db.log.Warn("the database's identity (system identifier, timeline) cannot be read by this role: a restore or failover is found from the changes row alone; GRANT pg_monitor to the role to find it from the identity too", "database", db.pool.name)
		return db.readChanges(ctx)
	}
	var l lastIDs
	copy(l[:], last)
	return r, l, horizon, err
}

// loadCredentials reads the admin token's hash with the changes row, in
// one statement: a transaction would hold the changes row's table while it
// waits for meta's, which a restore takes in the other order.
func (db *DB) loadCredentials(ctx context.Context) (changesRow, []byte, error) {
	var (
		r    changesRow
		hash []byte
	)
	err := db.pool.QueryRow(ctx, `SELECT version, version - other_version, stamp, prev_stamp,
		(SELECT value FROM meta WHERE key = 'admin_token_sha256') FROM changes WHERE id = 1`).
		Scan(&r.version, &r.credentials, &r.stamp, &r.prevStamp, &hash)
	return r, hash, err
}
