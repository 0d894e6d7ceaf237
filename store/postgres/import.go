package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"petstore/store"
)

// importBatch is how many rows one round trip of Import sends.
const importBatch = 1000

// Import copies a snapshot of another store (the bbolt file of an instance
// moving to PostgreSQL) into this database, in one transaction, keeping
// every id and setting each sequence past the ids the other store gave. It
// refuses a database that holds anything already: the move never merges.
func (db *DB) Import(ctx context.Context, s *store.Snapshot) error {
	// One transaction for the whole move, however long it takes: the
	// transaction timeout is for requests.
	ctx = context.WithValue(ctx, longTxKey{}, true)
	err := db.changeTx(ctx, credentialsChange, func(tx pgx.Tx) error {
		if err := refuseNonEmpty(ctx, tx); err != nil {
			return err
		}
		b := &batcher{ctx: ctx, tx: tx}
		for _, c := range s.Categories {
			b.queue(`INSERT INTO categories (id, name, description) VALUES ($1, $2, $3)`, c.ID, c.Name, c.Description)
		}
		for _, p := range s.Pets {
			b.queue(`INSERT INTO pets (id, name, category_id, status) VALUES ($1, $2, $3, $4)`, p.ID, p.Name, p.CategoryID, p.Status)
		}
		for _, it := range s.Inventory {
			b.queue(`INSERT INTO inventory (pet_id, quantity, status) VALUES ($1, $2, $3)`, it.PetID, it.Quantity, it.Status)
		}
		for _, o := range s.Orders {
			b.queue(`INSERT INTO orders (id, pet_id, quantity, ship_date, complete) VALUES ($1, $2, $3, $4, $5)`, o.ID, o.PetID, o.Quantity, o.ShipDate, o.Complete)
		}
		for _, k := range s.APIKeys {
			b.queue(`INSERT INTO api_keys (id, name, prefix, sha256, created_at) VALUES ($1, $2, $3, $4, $5)`, k.ID, k.Name, k.Prefix, k.SHA256, k.CreatedAt)
		}
		for _, d := range s.Domains {
			data, err := store.MarshalDomain(&d)
			if err != nil {
				return err
			}
			b.queue(`INSERT INTO domains (name, value) VALUES ($1, $2)`, d.Name, data)
		}
		for _, kv := range s.KV {
			b.queue(`INSERT INTO certmagic (key, value, modified) VALUES ($1, $2, $3)`, kv.Key, kv.Value, kv.Modified)
		}
		if s.AdminTokenSHA256 != nil {
			b.queue(`INSERT INTO meta (key, value) VALUES ('admin_token_sha256', $1)`, s.AdminTokenSHA256)
		}
		if err := b.flush(); err != nil {
			return err
		}
		if err := putMetaJSON(ctx, tx, "project", &s.Project); err != nil {
			return err
		}
		if err := putMetaJSON(ctx, tx, "settings", &s.Settings); err != nil {
			return err
		}
		return continueSequences(ctx, tx, s)
	})
	if err != nil {
		return fmt.Errorf("copying into the database: %w", err)
	}
	return nil
}

// refuseNonEmpty answers ECONFLICT, naming what it found, when the
// database holds any entity, credential, domain, setting or certificate.
func refuseNonEmpty(ctx context.Context, tx pgx.Tx) error {
	var found []string
	for _, table := range []string{"categories", "pets", "orders", "api_keys", "domains", "meta", "certmagic"} {
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

// continueSequences sets each identity and sequence so that the next id it
// gives follows both the last id the other store gave and the largest one
// copied.
func continueSequences(ctx context.Context, tx pgx.Tx, s *store.Snapshot) error {
	last := s.LastIDs
	for _, c := range s.Categories {
		last.Categories = max(last.Categories, c.ID)
	}
	for _, p := range s.Pets {
		last.Pets = max(last.Pets, p.ID)
	}
	for _, o := range s.Orders {
		last.Orders = max(last.Orders, o.ID)
	}
	for _, k := range s.APIKeys {
		last.APIKeys = max(last.APIKeys, k.ID)
	}
	for _, d := range s.Project.Deploys {
		last.Deploys = max(last.Deploys, d.ID)
	}
	for _, seq := range []struct {
		sequence string
		last     int64
	}{
		{`pg_get_serial_sequence('categories', 'id')`, last.Categories},
		{`pg_get_serial_sequence('pets', 'id')`, last.Pets},
		{`pg_get_serial_sequence('orders', 'id')`, last.Orders},
		{`pg_get_serial_sequence('api_keys', 'id')`, last.APIKeys},
		{`'deploy_ids'`, last.Deploys},
	} {
		if seq.last <= 0 {
			continue // never used: the sequence starts at 1 as it is
		}
		if _, err := tx.Exec(ctx, `SELECT setval(`+seq.sequence+`, $1)`, seq.last); err != nil {
			return fmt.Errorf("continuing the sequence %s: %w", seq.sequence, err)
		}
	}
	return nil
}

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
