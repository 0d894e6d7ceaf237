package postgres

import (
	"context"
	"crypto/rand"
	"time"

	"github.com/jackc/pgx/v5"

	"petstore/store"
)

func (db *DB) KVPut(ctx context.Context, key string, value []byte) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO certmagic (key, value, modified) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, modified = excluded.modified`, key, value, db.now().UTC())
	return err
}

func (db *DB) KVGet(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := db.pool.QueryRow(ctx, `SELECT value FROM certmagic WHERE key = $1`, key).Scan(&v)
	return v, notFound(err, store.KeyMissing(key))
}

func (db *DB) KVStat(ctx context.Context, key string) (store.KVInfo, error) {
	info := store.KVInfo{Key: key}
	err := db.pool.QueryRow(ctx, `SELECT length(value), modified FROM certmagic WHERE key = $1`, key).Scan(&info.Size, &info.Modified)
	return info, notFound(err, store.KeyMissing(key))
}

func (db *DB) KVDelete(ctx context.Context, key string) error {
	_, err := db.pool.Exec(ctx, `DELETE FROM certmagic WHERE key = $1 OR (left(key, length($2)) = $2)`, key, key+"/")
	return err
}

func (db *DB) KVKeys(ctx context.Context, prefix string) ([]string, error) {
	return queryRows(ctx, db.pool, pgx.RowTo[string], `SELECT key FROM certmagic WHERE left(key, length($1)) = $1 ORDER BY key`, store.KVDir(prefix))
}

// Locks are lease rows, renewed while held, so that a crashed instance's
// lock frees itself; advisory locks would be bound to one pooled
// connection that the pool may close.
const lockLease = 30 * time.Second

// instanceID tells this process's lease rows from others'.
var instanceID = rand.Text()

type heldLock struct {
	owner string
	stop  context.CancelFunc
	done  chan struct{}
}

// TryLock takes the named lock if no live lease holds it.
func (db *DB) TryLock(ctx context.Context, name string) (bool, error) {
	// One holder per name and process, even when its lease expired, so
	// that a holder's Unlock never releases another's lease.
	db.locksMu.Lock()
	_, held := db.locks[name]
	db.locksMu.Unlock()
	if held {
		return false, nil
	}
	owner := instanceID + "-" + rand.Text()
	tag, err := db.pool.Exec(ctx, `INSERT INTO certmagic_locks (name, owner, expires) VALUES ($1, $2, now() + $3::interval)
		ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires = excluded.expires
		WHERE certmagic_locks.expires < now()`, name, owner, lockLease.String())
	if err != nil || tag.RowsAffected() == 0 {
		return false, err
	}
	renewCtx, stop := context.WithCancel(context.Background())
	h := &heldLock{owner: owner, stop: stop, done: make(chan struct{})}
	go db.renew(renewCtx, name, h)
	db.locksMu.Lock()
	if db.locks == nil {
		db.locks = map[string]*heldLock{}
	}
	db.locks[name] = h
	db.locksMu.Unlock()
	return true, nil
}

// renew extends the lease of a held lock until it is released.
func (db *DB) renew(ctx context.Context, name string, h *heldLock) {
	defer close(h.done)
	store.EveryTick(ctx, lockLease/3, func() {
		_, _ = db.pool.Exec(ctx, `UPDATE certmagic_locks SET expires = now() + $3::interval WHERE name = $1 AND owner = $2`,
			name, h.owner, lockLease.String())
	})
}

// Lock waits for the named lock, polling its row, until ctx ends.
func (db *DB) Lock(ctx context.Context, name string) error {
	wait := 50 * time.Millisecond
	for {
		ok, err := db.TryLock(ctx, name)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

func (db *DB) Unlock(ctx context.Context, name string) error {
	db.locksMu.Lock()
	h := db.locks[name]
	delete(db.locks, name)
	db.locksMu.Unlock()
	if h == nil {
		return store.LockNotHeld(name)
	}
	h.stop()
	<-h.done
	_, err := db.pool.Exec(context.WithoutCancel(ctx), `DELETE FROM certmagic_locks WHERE name = $1 AND owner = $2`, name, h.owner)
	return err
}
