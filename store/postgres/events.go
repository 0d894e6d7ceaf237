package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"petstore/store"
)

// outboxTx is the transaction db.tx hands to a write: emit keeps the
// write's events, and db.tx inserts them before it commits.
type outboxTx struct {
	pgx.Tx
	events []store.PendingEvent
}

// emit records the event of a change in the write's transaction.
func emit(tx pgx.Tx, typ string, data any) error {
	e, err := store.NewEvent(typ, data)
	if err != nil {
		return err
	}
	o, ok := tx.(*outboxTx)
	if !ok {
		return errors.New("store: an event recorded outside db.tx")
	}
	o.events = append(o.events, e)
	return nil
}

// flush inserts the events, in the order they were recorded.
func (o *outboxTx) flush(ctx context.Context, now time.Time) error {
	switch len(o.events) {
	case 0:
		return nil
	case 1:
		_, err := o.Exec(ctx, `INSERT INTO events (type, created_at, data) VALUES ($1, $2, $3)`, o.events[0].Type, now, []byte(o.events[0].Data))
		return err
	}
	types := make([]string, len(o.events))
	data := make([][]byte, len(o.events))
	for i, e := range o.events {
		types[i], data[i] = e.Type, e.Data
	}
	_, err := o.Exec(ctx, `INSERT INTO events (type, created_at, data)
		SELECT t, $2, d FROM unnest($1::text[], $3::bytea[]) WITH ORDINALITY AS u(t, d, n) ORDER BY n`, types, now, data)
	return err
}

// visible limits a query of events to those whose writers have all
// finished (migrations/0004_events.sql says why).
const visible = `tx < pg_snapshot_xmin(pg_current_snapshot())::text::bigint`

func scanEvent(r pgx.Row) (store.Event, int64, error) {
	var e store.Event
	var tx, seq, to int64
	var data []byte
	err := r.Scan(&tx, &seq, &e.Type, &e.CreatedAt, &to, &data)
	e.ID = store.EventID{Tx: uint64(tx), Seq: uint64(seq)}
	e.CreatedAt = e.CreatedAt.UTC()
	e.Data = data
	return e, to, err
}

const eventCols = `tx, seq, type, created_at, target, data`

func (db *DB) Events(ctx context.Context, f store.EventFilter) ([]store.Event, error) {
	limit := store.Page{Limit: f.Limit}.Size()
	kinds := f.Kinds
	if kinds == nil {
		kinds = []string{}
	}
	return queryRows(ctx, db.pool, func(r pgx.CollectableRow) (store.Event, error) {
		e, _, err := scanEvent(r)
		return e, err
	}, `SELECT `+eventCols+` FROM events
		WHERE (tx, seq) > ($1, $2) AND `+visible+`
		AND (cardinality($3::text[]) = 0 OR split_part(type, '.', 1) = ANY($3::text[]))
		ORDER BY tx, seq LIMIT $4`, int64(f.After.Tx), int64(f.After.Seq), kinds, limit)
}

func (db *DB) OldestEvent(ctx context.Context) (store.EventID, error) {
	return db.eventID(ctx, `SELECT tx, seq FROM events ORDER BY tx, seq LIMIT 1`)
}

// NewestEvent is the newest visible event: one whose writer has not
// finished sorts after it whenever it commits.
func (db *DB) NewestEvent(ctx context.Context) (store.EventID, error) {
	return db.eventID(ctx, `SELECT tx, seq FROM events WHERE `+visible+` ORDER BY tx DESC, seq DESC LIMIT 1`)
}

// eventID is the id query selects, the zero id for none.
func (db *DB) eventID(ctx context.Context, query string) (store.EventID, error) {
	var tx, seq int64
	err := db.pool.QueryRow(ctx, query).Scan(&tx, &seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.EventID{}, nil
	}
	return store.EventID{Tx: uint64(tx), Seq: uint64(seq)}, err
}

// EventCursor is the cursor as the client gave it, but for the id of an
// event of another database, which a file numbered again before this one
// took it (Was): that is the cursor of the event it became, or of the last
// one before it.
func (db *DB) EventCursor(ctx context.Context, id store.EventID) (store.EventID, error) {
	if id.Tx == 0 || db.cache.noWas.Load() {
		return id, nil
	}
	var some, own, past bool
	var floor, first *int64
	err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE was_tx IS NOT NULL),
		EXISTS (SELECT 1 FROM events WHERE tx = $1 AND seq = $2),
		COALESCE(ROW($1::bigint, $2::bigint) > (SELECT was_tx, was_seq FROM events WHERE was_tx IS NOT NULL ORDER BY was_tx DESC, was_seq DESC LIMIT 1), true),
		(SELECT seq FROM events WHERE was_tx IS NOT NULL AND (was_tx, was_seq) <= ($1, $2) ORDER BY was_tx DESC, was_seq DESC LIMIT 1),
		(SELECT seq FROM events WHERE was_tx IS NOT NULL ORDER BY was_tx, was_seq LIMIT 1)`,
		int64(id.Tx), int64(id.Seq)).Scan(&some, &own, &past, &floor, &first)
	switch {
	case err != nil:
		return id, err
	case !some:
		db.cache.noWas.Store(true)
		return id, nil
	case own || past:
		return id, nil
	case floor != nil:
		return store.EventID{Seq: uint64(*floor)}, nil
	default:
		// Before every event it took: from the first of them.
		return store.EventID{Seq: uint64(*first) - 1}, nil
	}
}

func (db *DB) RecordEvent(ctx context.Context, e store.PendingEvent, to int64, key *store.IdempotentWrite) (store.Event, error) {
	var out store.Event
	err := db.tx(ctx, func(tx pgx.Tx) error {
		return db.keyed(ctx, tx, key, func() error {
			var err error
			out, _, err = scanEvent(tx.QueryRow(ctx, `INSERT INTO events (type, created_at, target, data) VALUES ($1, $2, $3, $4)
			RETURNING `+eventCols, e.Type, db.now(), to, []byte(e.Data)))
			return err
		}, func() (any, any) { return &out, nil })
	})
	return out, err
}

func (db *DB) PruneEvents(ctx context.Context, t time.Time) (int, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM events WHERE created_at < $1`, t)
	if err != nil {
		return 0, err
	}
	tag2, err := db.pool.Exec(ctx, `DELETE FROM deliveries WHERE state <> 'pending' AND scheduled_at < $1`, t)
	return int(tag.RowsAffected() + tag2.RowsAffected()), err
}

func scanWebhook(r pgx.Row) (store.Webhook, error) {
	var w store.Webhook
	var id int64
	var data []byte
	if err := r.Scan(&id, &data); err != nil {
		return w, err
	}
	err := json.Unmarshal(data, &w)
	w.ID = id
	return w, err
}

func webhookRow(r pgx.CollectableRow) (store.Webhook, error) { return scanWebhook(r) }

func (db *DB) CreateWebhook(ctx context.Context, w *store.Webhook, key *store.IdempotentWrite) error {
	in := *w
	in.CreatedAt = db.now().UTC().Truncate(time.Microsecond) // precise: Routes compares it with events' times
	err := db.tx(ctx, func(tx pgx.Tx) error {
		return db.keyed(ctx, tx, key, func() error {
			if err := tx.QueryRow(ctx, `INSERT INTO webhooks (value) VALUES ('{}') RETURNING id`).Scan(&in.ID); err != nil {
				return err
			}
			return putWebhook(ctx, tx, &in)
		}, func() (any, any) { return &in, nil })
	})
	if err == nil {
		db.marks.Acked(store.ResWebhooks, in.ID)
		*w = in
	}
	return err
}

func putWebhook(ctx context.Context, tx pgx.Tx, w *store.Webhook) error {
	data, err := json.Marshal(w)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE webhooks SET value = $2 WHERE id = $1`, w.ID, data)
	return err
}

func (db *DB) Webhook(ctx context.Context, id int64) (store.Webhook, error) {
	w, err := scanWebhook(db.pool.QueryRow(ctx, `SELECT id, value FROM webhooks WHERE id = $1`, id))
	return w, notFound(err, store.NotFound("webhook", id))
}

func (db *DB) Webhooks(ctx context.Context, p store.Page) ([]store.Webhook, int64, error) {
	return pageOf(ctx, db.pool, p, func(w *store.Webhook) int64 { return w.ID }, scanWebhook,
		`SELECT id, value FROM webhooks WHERE id > $1 ORDER BY id LIMIT $2`)
}

func (db *DB) UpdateWebhook(ctx context.Context, id int64, fn func(*store.Webhook) error, key *store.IdempotentWrite) (store.Webhook, error) {
	var w store.Webhook
	err := db.tx(ctx, func(tx pgx.Tx) error {
		return db.keyed(ctx, tx, key, func() error {
			var err error
			w, err = scanWebhook(tx.QueryRow(ctx, `SELECT id, value FROM webhooks WHERE id = $1 FOR UPDATE`, id))
			if err != nil {
				return notFound(err, store.NotFound("webhook", id))
			}
			if err := fn(&w); err != nil {
				return err
			}
			w.ID = id
			return putWebhook(ctx, tx, &w)
		}, func() (any, any) { return &w, nil })
	})
	if err != nil {
		return store.Webhook{}, err
	}
	return w, nil
}

func (db *DB) DeleteWebhook(ctx context.Context, id int64) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM webhooks WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		err = store.NotFound("webhook", id)
	}
	return err
}

// emitDomain records the events of a domain's change (old nil: added).
func emitDomain(tx pgx.Tx, old, updated *store.Domain) error {
	for _, typ := range store.DomainEvents(old, updated) {
		if err := emit(tx, typ, updated); err != nil {
			return err
		}
	}
	return nil
}

// The single-statement writes (pets.go, orders.go) insert their event in
// the same statement. An entity the statement creates has its id only as
// it runs: its event data is passed without it (afterID) and completed in
// SQL (dataWithID).

// afterID is the event data of an entity created with id 0, less its
// leading `{"id":0`.
func afterID(data []byte) []byte {
	const prefix = `{"id":0`
	if !bytes.HasPrefix(data, []byte(prefix)) {
		panic("postgres: event data does not begin with the id: " + string(data))
	}
	return data[len(prefix):]
}

// dataWithID is the SQL of the event data whose id is idExpr and whose
// rest (afterID) is the bytea parameter param.
func dataWithID(idExpr, param string) string {
	return `convert_to('{"id":' || ` + idExpr + `, 'UTF8') || ` + param + `::bytea`
}

// inventoryData is the SQL of an inventory event's data, as
// store.InventoryItem.AppendJSON writes it, from row r (a status is a
// plain word, checked by the schema).
func inventoryData(r string) string {
	return `convert_to('{"petId":' || ` + r + `.pet_id || ',"quantity":' || ` + r + `.quantity || ',"status":"' || ` + r + `.status || '"}', 'UTF8')`
}
