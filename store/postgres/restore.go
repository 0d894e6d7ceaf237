package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"petstore/store"
)

// A poll that finds a sequence below this instance's marks (store.Marks),
// or the changes row rewound (changes.go), found a restore of an older
// dump: the instance raises every sequence above its marks, revokes again
// the keys it brought back, and records store.restored, once per rewind.

// sequences are those of the resources whose ids a rewind must not give
// out again, and the tables whose inserts draw from them.
var sequences = []struct{ res, seq, table string }{
	{store.ResCategories, `pg_get_serial_sequence('categories', 'id')::regclass`, "categories"},
	{store.ResPets, `pg_get_serial_sequence('pets', 'id')::regclass`, "pets"},
	{store.ResOrders, `pg_get_serial_sequence('orders', 'id')::regclass`, "orders"},
	{store.ResAPIKeys, `pg_get_serial_sequence('api_keys', 'id')::regclass`, "api_keys"},
	{store.ResWebhooks, `pg_get_serial_sequence('webhooks', 'id')::regclass`, "webhooks"},
	{store.ResDeliveries, `pg_get_serial_sequence('deliveries', 'id')::regclass`, "deliveries"},
	{store.ResDeploys, `'deploy_ids'::regclass`, ""},
	// The sign of a restore that took back only updates; events' ids are
	// unique by their transaction, so no lock.
	{resEvents, `pg_get_serial_sequence('events', 'seq')::regclass`, ""},
}

// resEvents is the mark of the events' sequence.
const resEvents = "events"

// lastIDsByRes points at the id in last of each resource of sequences.
func lastIDsByRes(last *store.LastIDs) map[string]*int64 {
	return map[string]*int64{store.ResCategories: &last.Categories, store.ResPets: &last.Pets, store.ResOrders: &last.Orders,
		store.ResAPIKeys: &last.APIKeys, store.ResWebhooks: &last.Webhooks, store.ResDeliveries: &last.Deliveries,
		store.ResDeploys: &last.Deploys, resEvents: &last.Events}
}

// nextVersion is a written record's next version: past the floor that a
// rewind sets (handleRewind), since a version at or below it may have been
// acknowledged for a state the restore took back.
const nextVersion = `GREATEST(version + 1, COALESCE(pg_sequence_last_value('version_floor'), 0) + 1)`

// wentBackCode is the SQLSTATE of a create that drew an id not above the
// marks (division by zero: createPetSQL).
const wentBackCode = "22012"

// wentBackError is what a create answers when its id went back and the
// sequence could not be raised yet.
func wentBackError(err error) error {
	if !violates(err, wentBackCode) {
		return err
	}
	return store.ErrorWithCause(err, store.EUNAVAILABLE, "the database went back in time (a restore) and its sequences are being raised past the ids already given out; retry after the seconds in Retry-After")
}

// lastIDs are the sequences' last values, in the order of sequences.
type lastIDs [8]int64

// lastIDsSQL reads them, with the next transaction id, as two columns.
var lastIDsSQL = func() string {
	var cols []string
	for _, s := range sequences {
		cols = append(cols, `COALESCE(pg_sequence_last_value(`+s.seq+`), 0)`)
	}
	return `ARRAY[` + strings.Join(cols, ", ") + `], pg_snapshot_xmax(pg_current_snapshot())::text::bigint`
}()

// observe raises the marks to what a poll found.
func (db *DB) observe(last lastIDs, horizon int64) {
	for i, s := range sequences {
		db.marks.Observe(s.res, last[i])
	}
	// Event ids are made from the counter: behind the one seen, they sort
	// below what cursors and the fan-out have passed.
	if h := db.marks.Horizon(); horizon < h {
		db.behind.Failed(db.log, fmt.Sprintf("the database's transaction counter is behind the one this instance saw (a dump restored into another cluster, a failover that lost transactions): until it passes, events written now are skipped by the cursors and the webhook fan-out of before; to end it, stop its cluster and run pg_resetwal -e %d (docs/several-instances.md)", h>>32+1),
			"database", db.pool.name, "transaction_counter", horizon, "seen", h)
	} else {
		db.behind.Succeeded()
		db.marks.SetHorizon(horizon)
	}
	if err := db.marks.Save(db.pool.name); err != nil {
		db.log.Warn("the restore marks cannot be saved: a restore while this instance is stopped would not be found from them", "err", err)
	}
}

// handleRewind makes the database continue after everything this instance
// knows was acknowledged.
func (db *DB) handleRewind(ctx context.Context, last lastIDs) error {
	marks := db.marks.LastIDs()
	restored, headroom := map[string]int64{}, map[string]int64{}
	for i, s := range sequences {
		restored[s.res] = last[i]
		headroom[s.res] = db.marks.Headroom(s.res)
	}
	rolled := store.RolledBackIDs(restored, marks, headroom)
	revoked := db.marks.Revocations()
	horizon := db.marks.Horizon()
	var again int
	var recorded bool
	err := db.txWith(ctx, giveWay, func(tx pgx.Tx) error {
		// No insert draws an id between a sequence's read and its setval.
		tables := []string{}
		for _, s := range sequences {
			if s.table != "" {
				tables = append(tables, s.table)
			}
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE `+strings.Join(tables, ", ")+` IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		for i, s := range sequences {
			target := marks[s.res] + headroom[s.res]
			if marks[s.res] <= last[i] {
				continue
			}
			var now int64
			if err := tx.QueryRow(ctx, `SELECT GREATEST(COALESCE(pg_sequence_last_value(`+s.seq+`), 0), $1)`, target).Scan(&now); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `SELECT setval(`+s.seq+`, $1)`, now); err != nil {
				return fmt.Errorf("raising the sequence of %s: %w", s.res, err)
			}
			if r, ok := rolled[s.res]; ok {
				r.ResumesAfter = now
				rolled[s.res] = r
			}
		}
		// Every version counts a write that recorded an event: the events'
		// sequence, raised past the marks, is above every version given.
		if _, err := tx.Exec(ctx, `SELECT setval('version_floor', GREATEST(pg_sequence_last_value(`+sequences[len(sequences)-1].seq+`), 1))`); err != nil {
			return err
		}
		n, err := revokeAgain(ctx, tx, revoked)
		if err != nil {
			return err
		}
		again = n
		if n > 0 {
			if _, err := tx.Exec(ctx, credentialsChange, rand.Int64()); err != nil {
				return err
			}
		}
		recorded, err = db.recordRestored(ctx, tx, horizon, store.Restored{Store: "postgres", IDs: rolled, RevokedAgain: n})
		return err
	})
	if err != nil {
		return err
	}
	db.keys.forget()
	db.marks.Rewound()
	db.log.Warn("the database went back in time: its sequences now continue after every id this instance knew was given out, and the keys it knew were revoked are revoked again",
		"database", db.pool.name, "rolled_back", rolledText(rolled), "revoked_again", again, "event_recorded", recorded)
	return nil
}

func revokeAgain(ctx context.Context, tx pgx.Tx, revoked []store.Revocation) (int, error) {
	if len(revoked) == 0 {
		return 0, nil
	}
	hashes, ids, ats := make([][]byte, len(revoked)), make([]int64, len(revoked)), make([]time.Time, len(revoked))
	for i, r := range revoked {
		hashes[i], ids[i], ats[i] = r.SHA256, r.KeyID, r.RevokedAt
	}
	tag, err := tx.Exec(ctx, `DELETE FROM api_keys WHERE sha256 = ANY($1)`, hashes)
	if err != nil {
		return 0, err
	}
	_, err = tx.Exec(ctx, `INSERT INTO revocations (sha256, key_id, revoked_at)
		SELECT * FROM unnest($1::bytea[], $2::bigint[], $3::timestamptz[]) ON CONFLICT (sha256) DO NOTHING`, hashes, ids, ats)
	return int(tag.RowsAffected()), err
}

// recordRestored records store.restored unless an instance already did:
// one written after horizon (a transaction id, which a restore does not
// take back) can only be of this rewind.
func (db *DB) recordRestored(ctx context.Context, tx pgx.Tx, horizon int64, r store.Restored) (bool, error) {
	var done bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE type = $1 AND tx >= $2)`,
		store.EventStoreRestored, horizon).Scan(&done); err != nil || (done && horizon > 0) {
		return false, err
	}
	var t, seq int64
	var at time.Time
	err := tx.QueryRow(ctx, `SELECT tx, seq, created_at FROM events WHERE tx < $1 ORDER BY tx DESC, seq DESC LIMIT 1`, horizon).Scan(&t, &seq, &at)
	switch {
	case err == nil:
		r.RestoredTo = store.EventID{Tx: uint64(t), Seq: uint64(seq)}.String()
		at = at.UTC()
		r.RestoredToTime = &at
	case !errors.Is(err, pgx.ErrNoRows):
		return false, err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return false, err
	}
	return true, emit(tx, store.EventStoreRestored, json.RawMessage(data))
}

func rolledText(rolled map[string]store.RolledBack) string {
	var parts []string
	for _, res := range store.Resources {
		if r, ok := rolled[res]; ok {
			parts = append(parts, fmt.Sprintf("%s %d..%d (now after %d)", res, r.Restored+1, r.Acknowledged, r.ResumesAfter))
		}
	}
	if len(parts) == 0 {
		return "no ids"
	}
	return strings.Join(parts, ", ")
}

// loadRevocations reads the revocations table into the marks.
func (db *DB) loadRevocations(ctx context.Context) error {
	rows, err := db.pool.Query(ctx, `SELECT sha256, key_id, revoked_at, pardoned_at FROM revocations`)
	if err != nil {
		return err
	}
	var r store.Revocation
	var pardoned *time.Time
	_, err = pgx.ForEachRow(rows, []any{&r.SHA256, &r.KeyID, &r.RevokedAt, &pardoned}, func() error {
		if len(r.SHA256) != sha256.Size {
			return nil
		}
		if pardoned != nil {
			db.marks.Pardon([32]byte(r.SHA256), *pardoned)
			return nil
		}
		db.marks.Revoke(store.Revocation{SHA256: append([]byte(nil), r.SHA256...), KeyID: r.KeyID, RevokedAt: r.RevokedAt.UTC()})
		return nil
	})
	return err
}

// UnrevokeAPIKeys undoes the revocations of the keys with these ids, for an
// operator who restores an older dump to bring a revoked key back.
func (db *DB) UnrevokeAPIKeys(ctx context.Context, ids []int64) (int, error) {
	var n int
	err := db.changeTx(ctx, credentialsChange, func(tx pgx.Tx) error {
		// A key a restore brought back has lost its row: one is made.
		if _, err := tx.Exec(ctx, `INSERT INTO revocations (sha256, key_id, revoked_at)
			SELECT sha256, id, $2 FROM api_keys WHERE id = ANY($1) ON CONFLICT (sha256) DO NOTHING`, ids, db.now()); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE revocations SET pardoned_at = $2 WHERE key_id = ANY($1)`, ids, db.now().Add(time.Microsecond))
		n = int(tag.RowsAffected())
		return err
	})
	if err == nil {
		db.marks.PardonKeys(ids)
		err = db.marks.Save(db.pool.name)
	}
	return n, err
}

// Marks are this instance's restore marks (tests read them).
func (db *DB) Marks() *store.Marks { return db.marks }
