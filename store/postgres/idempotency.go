package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"petstore/store"
)

// claimKeySQL claims scope's key for this transaction, or takes over an
// expired answer, and answers a row only when it did. A concurrent claim
// not yet committed makes it wait for that transaction.
const claimKeySQL = `INSERT INTO idempotency_keys AS k (scope, key, fingerprint, answer, created_at, expires_at)
	VALUES ($1, $2, $3, NULL, $4, $5)
	ON CONFLICT (scope, key) DO UPDATE
		SET fingerprint = EXCLUDED.fingerprint, answer = NULL, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
		WHERE k.expires_at <= EXCLUDED.created_at
	RETURNING true`

const keptSQL = `SELECT fingerprint, answer, created_at, expires_at FROM idempotency_keys
	WHERE scope = $1 AND key = $2 AND answer IS NOT NULL`

// idempotent runs write, one statement that fills record, on the pool, or,
// with an Idempotency-Key, keyed in a transaction.
func (db *DB) idempotent(ctx context.Context, w *store.IdempotentWrite, record any, write func(q querier) error) error {
	if w == nil {
		return write(db.pool)
	}
	return db.tx(ctx, func(tx pgx.Tx) error {
		return db.keyed(ctx, tx, w, func() error { return write(tx) }, func() (any, any) { return record, nil })
	})
}

// keyed runs write inside tx with w's key (nil: none): it claims the key
// first (or answers as store.IdempotentWrite.Found says), and keeps what
// kept returns last, so that it commits with the change.
func (db *DB) keyed(ctx context.Context, tx pgx.Tx, w *store.IdempotentWrite, write func() error, kept func() (record, beside any)) error {
	if w == nil {
		return write()
	}
	now := db.now()
	key := w.StoredKey()
	var claimed bool
	err := tx.QueryRow(ctx, claimKeySQL, w.Scope, key, w.Fingerprint, now, now.Add(w.TTL)).Scan(&claimed)
	if errors.Is(err, pgx.ErrNoRows) {
		k, err := scanKept(tx.QueryRow(ctx, keptSQL, w.Scope, key))
		if err != nil {
			return err
		}
		if err := w.Found(k, now); err != nil {
			return err
		}
		// Expired between the two statements: the client retries.
		return store.Errorf(store.EIDEMPOTENCYBUSY, "Idempotency-Key %q is being taken over; retry after the seconds in Retry-After", w.Key)
	}
	if err != nil {
		return err
	}
	if err := write(); err != nil {
		return err
	}
	record, beside := kept()
	k, err := w.Keep(record, beside, now)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE idempotency_keys SET answer = $3 WHERE scope = $1 AND key = $2`, w.Scope, key, k.Answer)
	return err
}

func scanKept(r pgx.Row) (store.KeptAnswer, error) {
	var k store.KeptAnswer
	err := r.Scan(&k.Fingerprint, &k.Answer, &k.CreatedAt, &k.ExpiresAt)
	k.CreatedAt, k.ExpiresAt = k.CreatedAt.UTC(), k.ExpiresAt.UTC()
	return k, err
}

func (db *DB) KeepAnswer(ctx context.Context, key *store.IdempotentWrite, record, beside any) error {
	if key == nil {
		return nil
	}
	return db.tx(ctx, func(tx pgx.Tx) error {
		return db.keyed(ctx, tx, key, func() error { return nil }, func() (any, any) { return record, beside })
	})
}

func (db *DB) KeptAnswer(ctx context.Context, w *store.IdempotentWrite) (store.KeptAnswer, error) {
	k, err := scanKept(db.pool.QueryRow(ctx, keptSQL, w.Scope, w.StoredKey()))
	if err == nil && !db.now().Before(k.ExpiresAt) {
		err = pgx.ErrNoRows
	}
	return k, notFound(err, store.Errorf(store.ENOTFOUND, "no answer is kept for Idempotency-Key %q", w.Key))
}

func (db *DB) SweepKeptAnswers(ctx context.Context, max int) (int, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE (scope, key) IN (
		SELECT scope, key FROM idempotency_keys WHERE expires_at <= $1 AND answer IS NOT NULL LIMIT $2)`, db.now(), store.MaxSweep)
	if err != nil {
		return 0, err
	}
	removed := int(tag.RowsAffected())
	if max <= 0 || removed == store.MaxSweep {
		return removed, nil
	}
	tag, err = db.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE (scope, key) IN (
		SELECT scope, key FROM idempotency_keys WHERE answer IS NOT NULL ORDER BY expires_at DESC OFFSET $1 LIMIT $2)`, max, store.MaxSweep)
	if err != nil {
		return removed, err
	}
	return removed + int(tag.RowsAffected()), nil
}
