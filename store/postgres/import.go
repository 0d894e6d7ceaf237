package postgres

import (
	"cmp"
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"petstore/store"
)

// importBatch is how many rows one round trip of Import sends.
const importBatch = 1000

// Import copies what another store streams into this empty database, in
// one transaction, keeping every id and setting each sequence past the ids
// the other store gave.
func (db *DB) Import(ctx context.Context, from store.Streamer) error {
	ctx = context.WithValue(ctx, longTxKey{}, true)
	err := db.changeTx(ctx, credentialsChange, func(tx pgx.Tx) error {
		if err := refuseNonEmpty(ctx, tx); err != nil {
			return err
		}
		in := &importer{b: batcher{ctx: ctx, tx: tx}}
		if err := from.Stream(ctx, in); err != nil {
			return err
		}
		if err := in.b.flush(); err != nil {
			return err
		}
		if err := putMetaJSON(ctx, tx, "project", &in.rest.Project); err != nil {
			return err
		}
		if err := putMetaJSON(ctx, tx, "settings", &in.rest.Settings); err != nil {
			return err
		}
		return continueSequences(ctx, tx, in.last)
	})
	if err != nil {
		return fmt.Errorf("copying into the database: %w", err)
	}
	return nil
}

type importer struct {
	b    batcher
	last store.LastIDs
	rest store.Rest
}

// Totals cannot start the stream again: the source's transaction is
// this one.
func (in *importer) Totals(store.Totals) error { return nil }

func (in *importer) Record(r any) error {
	b := &in.b
	in.last.Raise(r)
	switch r := r.(type) {
	case *store.Category:
		b.queue(`INSERT INTO categories (id, name, description, version) VALUES ($1, $2, $3, $4)`, r.ID, r.Name, r.Description, max(r.Version, 1))
	case *store.Pet:
		b.queue(`INSERT INTO pets (id, name, category_id, status, version) VALUES ($1, $2, $3, $4, $5)`, r.ID, r.Name, r.CategoryID, r.Status, max(r.Version, 1))
	case *store.InventoryItem:
		b.queue(`INSERT INTO inventory (pet_id, quantity, status) VALUES ($1, $2, $3)`, r.PetID, r.Quantity, r.Status)
	case *store.Order:
		b.queue(`INSERT INTO orders (id, pet_id, quantity, ship_date, complete, version) VALUES ($1, $2, $3, $4, $5, $6)`, r.ID, r.PetID, r.Quantity, r.ShipDate, r.Complete, max(r.Version, 1))
	case *store.StoredAPIKey:
		b.queue(`INSERT INTO api_keys (id, name, prefix, sha256, created_at) VALUES ($1, $2, $3, $4, $5)`, r.ID, r.Name, r.Prefix, r.SHA256, r.CreatedAt)
	case *store.Domain:
		data, err := store.MarshalDomain(r)
		if err != nil {
			return err
		}
		b.queue(`INSERT INTO domains (name, value) VALUES ($1, $2)`, r.Name, data)
	case *store.KVEntry:
		b.queue(`INSERT INTO certmagic (key, value, modified) VALUES ($1, $2, $3)`, r.Key, r.Value, r.Modified)
	case *store.Webhook:
		b.queue(`INSERT INTO webhooks (id, value) VALUES ($1, $2)`, r.ID, jsonValue{r})
	case *store.StoredEvent:
		// The event keeps its id, so that clients' cursors go on: a bbolt
		// file's (Tx 0) come before every id PostgreSQL gives.
		b.queue(`INSERT INTO events (tx, seq, type, created_at, target, data, was_tx, was_seq) OVERRIDING SYSTEM VALUE VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			int64(r.ID.Tx), int64(r.ID.Seq), r.Type, r.CreatedAt, r.Target, []byte(r.Data), wasColumn(r.Was.Tx, r.Was), wasColumn(r.Was.Seq, r.Was))
	case *store.Delivery:
		b.queue(`INSERT INTO deliveries (id, webhook_id, event_tx, event_seq, state, scheduled_at, value) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			r.ID, r.WebhookID, int64(r.EventID.Tx), int64(r.EventID.Seq), r.State, r.ScheduledAt, jsonValue{r})
	case *store.StoredAnswer:
		b.queue(`INSERT INTO idempotency_keys (scope, key, fingerprint, answer, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			r.Scope, r.Key, r.Fingerprint, r.Answer, r.CreatedAt, r.ExpiresAt)
	default:
		return fmt.Errorf("import: a record of type %T", r)
	}
	return b.err
}

func (in *importer) Rest(r store.Rest) error {
	in.rest, in.last = r, in.last.Past(r)
	in.b.queue(`UPDATE event_dispatch SET tx = $1, seq = $2 WHERE id = 1`, int64(r.Dispatched.Tx), int64(r.Dispatched.Seq))
	if r.AdminTokenSHA256 != nil {
		in.b.queue(`INSERT INTO meta (key, value) VALUES ('admin_token_sha256', $1)`, r.AdminTokenSHA256)
	}
	if r.VersionFloor > 0 {
		in.b.queue(`SELECT setval('version_floor', $1)`, r.VersionFloor)
	}
	// The revocations become the database's own (restore.go).
	for _, rev := range r.Revocations {
		in.b.queue(`INSERT INTO revocations (sha256, key_id, revoked_at) VALUES ($1, $2, $3)
			ON CONFLICT (sha256) DO UPDATE SET key_id = $2, revoked_at = $3, pardoned_at = NULL`, []byte(rev.SHA256), rev.KeyID, rev.RevokedAt)
	}
	return in.b.flush()
}

// importLock is the advisory lock of a move into the database.
const importLock = 0x706574736d6f7665 // "petsmove"

// refuseNonEmpty answers ECONFLICT, naming what it found: a move never
// merges.
func refuseNonEmpty(ctx context.Context, tx pgx.Tx) error {
	// One move at a time: another's rows, not committed yet, count as none.
	var alone bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, importLock).Scan(&alone); err != nil || !alone {
		return cmp.Or[error](err, store.Errorf(store.ECONFLICT, "another move is copying into the database now, and the move copies into an empty database only: if that one fails, the database stays empty and this one can be run again"))
	}
	var found []string
	for _, table := range []string{"categories", "pets", "orders", "api_keys", "domains", "meta", "certmagic", "webhooks", "events", "deliveries", "idempotency_keys"} {
		var n int64
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			found = append(found, fmt.Sprintf("%d rows in %s", n, table))
		}
	}
	if len(found) > 0 {
		return store.Errorf(store.ECONFLICT, "the target database is not empty (%s): the move copies into an empty database only", strings.Join(found, ", "))
	}
	return nil
}

func continueSequences(ctx context.Context, tx pgx.Tx, last store.LastIDs) error {
	ids := lastIDsByRes(&last)
	for _, s := range sequences {
		if *ids[s.res] <= 0 {
			continue // never used: the sequence starts at 1 as it is
		}
		if _, err := tx.Exec(ctx, `SELECT setval(`+s.seq+`, $1)`, *ids[s.res]); err != nil {
			return fmt.Errorf("continuing the sequence %s: %w", strings.TrimSuffix(s.seq, "::regclass"), err)
		}
	}
	return nil
}

// wasColumn is v, one half of an event's Was: NULL for none.
func wasColumn(v uint64, was store.EventID) *int64 {
	if was.IsZero() {
		return nil
	}
	n := int64(v)
	return &n
}

// jsonValue is v's JSON, for a BYTEA column.
type jsonValue struct{ v any }

func (j jsonValue) Value() (driver.Value, error) { return json.Marshal(j.v) }

// batcher sends queued statements in round trips of importBatch.
type batcher struct {
	ctx   context.Context
	tx    pgx.Tx
	batch pgx.Batch
	err   error
}

func (b *batcher) queue(sql string, args ...any) {
	if b.err != nil {
		return
	}
	b.batch.Queue(sql, args...)
	if b.batch.Len() >= importBatch {
		b.err = b.flush()
	}
}

func (b *batcher) flush() error {
	if b.err != nil || b.batch.Len() == 0 {
		return b.err
	}
	err := b.tx.SendBatch(b.ctx, &b.batch).Close()
	b.batch = pgx.Batch{}
	return err
}

var _ store.Importer = (*DB)(nil)
