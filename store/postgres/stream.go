package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"petstore/store"
)

// Stream gives everything the database holds, as of one snapshot, one row
// at a time. A retried transaction starts the stream again from Totals.
func (db *DB) Stream(ctx context.Context, to store.Sink) error {
	ctx = context.WithValue(ctx, longTxKey{}, true)
	return db.txWith(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// The session's timeouts, which are for requests, would end a
		// long move.
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0; SET LOCAL idle_in_transaction_session_timeout = 0`); err != nil {
			return err
		}
		// A newer version's migrations may have added what this one would
		// leave behind.
		files, err := migrationFiles()
		if err != nil {
			return err
		}
		var applied int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&applied); err != nil {
			return err
		}
		if known := files[len(files)-1].version; applied > known {
			return store.Errorf(store.EINVALID, "the database's schema is at version %d, which a newer version migrated (this one knows up to %d); nothing was copied: move it with that version", applied, known)
		}
		var t store.Totals
		err = tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM categories), (SELECT count(*) FROM pets), (SELECT count(*) FROM inventory),
			(SELECT count(*) FROM orders), (SELECT count(*) FROM api_keys), (SELECT count(*) FROM domains), (SELECT count(*) FROM certmagic),
			(SELECT count(*) FROM webhooks), (SELECT count(*) FROM events), (SELECT count(*) FROM deliveries),
			(SELECT count(*) FROM idempotency_keys WHERE answer IS NOT NULL)`).
			Scan(&t.Categories, &t.Pets, &t.Inventory, &t.Orders, &t.APIKeys, &t.Domains, &t.KV, &t.Webhooks, &t.Events, &t.Deliveries, &t.Answers)
		if err != nil {
			return err
		}
		if err := to.Totals(t); err != nil {
			return err
		}
		// One query per kind, in the stream's order.
		queries := []rowQuery{
			rowsOf(`SELECT id, name, description, version FROM categories ORDER BY id`, func(r pgx.Rows, c *store.Category) error {
				return r.Scan(&c.ID, &c.Name, &c.Description, &c.Version)
			}),
			rowsOf(`SELECT id, name, category_id, status, version FROM pets ORDER BY id`, func(r pgx.Rows, p *store.Pet) error {
				return r.Scan(&p.ID, &p.Name, &p.CategoryID, &p.Status, &p.Version)
			}),
			rowsOf(`SELECT pet_id, quantity, status FROM inventory ORDER BY pet_id`, func(r pgx.Rows, it *store.InventoryItem) error {
				return r.Scan(&it.PetID, &it.Quantity, &it.Status)
			}),
			rowsOf(`SELECT id, pet_id, quantity, ship_date, complete, version FROM orders ORDER BY id`, func(r pgx.Rows, o *store.Order) (err error) {
				*o, err = scanVersionedOrder(r)
				return err
			}),
			rowsOf(`SELECT id, name, prefix, sha256, created_at FROM api_keys ORDER BY id`, func(r pgx.Rows, k *store.StoredAPIKey) error {
				err := r.Scan(&k.ID, &k.Name, &k.Prefix, &k.SHA256, &k.CreatedAt)
				k.CreatedAt = k.CreatedAt.UTC()
				return err
			}),
			{}, // the domains
			rowsOf(`SELECT key, value, modified FROM certmagic ORDER BY key`, func(r pgx.Rows, kv *store.KVEntry) error {
				err := r.Scan(&kv.Key, &kv.Value, &kv.Modified)
				kv.Modified = kv.Modified.UTC()
				return err
			}),
			// The webhooks whole, secrets included.
			rowsOf(`SELECT id, value FROM webhooks ORDER BY id`, func(r pgx.Rows, w *store.Webhook) (err error) {
				*w, err = scanWebhook(r)
				return err
			}),
			rowsOf(`SELECT tx, seq, type, created_at, target, data, COALESCE(was_tx, 0), COALESCE(was_seq, 0) FROM events ORDER BY tx, seq`, func(r pgx.Rows, e *store.StoredEvent) error {
				var tx, seq, wasTx, wasSeq int64
				err := r.Scan(&tx, &seq, &e.Type, &e.CreatedAt, &e.Target, &e.Data, &wasTx, &wasSeq)
				e.ID, e.Was = store.EventID{Tx: uint64(tx), Seq: uint64(seq)}, store.EventID{Tx: uint64(wasTx), Seq: uint64(wasSeq)}
				e.CreatedAt = e.CreatedAt.UTC()
				return err
			}),
			rowsOf(`SELECT id, event_tx, event_seq, value FROM deliveries ORDER BY id`, func(r pgx.Rows, d *store.Delivery) (err error) {
				*d, err = scanDelivery(r)
				return err
			}),
			// A claim not yet answered belongs to a transaction under way.
			rowsOf(`SELECT scope, key, fingerprint, answer, created_at, expires_at FROM idempotency_keys WHERE answer IS NOT NULL ORDER BY scope, key`, func(r pgx.Rows, a *store.StoredAnswer) error {
				err := r.Scan(&a.Scope, &a.Key, &a.Fingerprint, &a.Answer, &a.CreatedAt, &a.ExpiresAt)
				a.CreatedAt, a.ExpiresAt = a.CreatedAt.UTC(), a.ExpiresAt.UTC()
				return err
			}),
		}
		for _, q := range queries {
			if q.sql != "" {
				err = streamRows(ctx, tx, q, to)
			} else { // the domains, which are few
				var list []store.Domain
				list, err = domains(ctx, tx, false)
				for i := 0; err == nil && i < len(list); i++ {
					err = to.Record(&list[i])
				}
			}
			if err != nil {
				return err
			}
		}
		var rest store.Rest
		var last []int64
		var horizon, dispatchedTx, dispatchedSeq int64
		err = tx.QueryRow(ctx, `SELECT `+lastIDsSQL+`, (SELECT tx FROM event_dispatch WHERE id = 1), (SELECT seq FROM event_dispatch WHERE id = 1), COALESCE(pg_sequence_last_value('version_floor'), 0)`).
			Scan(&last, &horizon, &dispatchedTx, &dispatchedSeq, &rest.VersionFloor)
		rest.Dispatched = store.EventID{Tx: uint64(dispatchedTx), Seq: uint64(dispatchedSeq)}
		if err != nil {
			return err
		}
		ids := lastIDsByRes(&rest.LastIDs)
		for i, s := range sequences {
			*ids[s.res] = last[i]
		}
		if rest.AdminTokenSHA256, err = meta(ctx, tx, "admin_token_sha256", false, func(b []byte) ([]byte, error) { return b, nil }); err != nil {
			return err
		}
		if rest.Project, err = meta(ctx, tx, "project", false, store.UnmarshalProject); err != nil {
			return err
		}
		if rest.Settings, err = meta(ctx, tx, "settings", false, store.UnmarshalSettings); err != nil {
			return err
		}
		if rest.Revocations, err = revocations(ctx, tx); err != nil {
			return err
		}
		return to.Rest(rest)
	})
}

type rowQuery struct {
	sql  string
	scan func(pgx.Rows) (any, error)
}

// rowsOf is the query of records of type T, scan reading each row into a
// zeroed record that every row reuses.
func rowsOf[T any](sql string, scan func(pgx.Rows, *T) error) rowQuery {
	var rec T
	return rowQuery{sql, func(r pgx.Rows) (any, error) {
		rec = *new(T)
		return &rec, scan(r, &rec)
	}}
}

func streamRows(ctx context.Context, tx pgx.Tx, q rowQuery, to store.Sink) error {
	rows, err := tx.Query(ctx, q.sql)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		r, err := q.scan(rows)
		if err != nil {
			return err
		}
		if err := to.Record(r); err != nil {
			return err
		}
	}
	return rows.Err()
}

var _ store.Streamer = (*DB)(nil)

func revocations(ctx context.Context, tx pgx.Tx) ([]store.Revocation, error) {
	return queryRows(ctx, tx, func(r pgx.CollectableRow) (store.Revocation, error) {
		var rev store.Revocation
		err := r.Scan(&rev.SHA256, &rev.KeyID, &rev.RevokedAt)
		rev.RevokedAt = rev.RevokedAt.UTC()
		return rev, err
	}, `SELECT sha256, key_id, revoked_at FROM revocations WHERE pardoned_at IS NULL ORDER BY key_id, sha256`)
}
