package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"petstore/store"
)

// insertDelivery stores a new delivery and sets its id.
func insertDelivery(ctx context.Context, tx pgx.Tx, d *store.Delivery) error {
	if err := tx.QueryRow(ctx, `INSERT INTO deliveries (webhook_id, event_tx, event_seq, state, scheduled_at, value)
		VALUES ($1, $2, $3, $4, $5, '{}') RETURNING id`,
		d.WebhookID, int64(d.EventID.Tx), int64(d.EventID.Seq), d.State, d.ScheduledAt).Scan(&d.ID); err != nil {
		return err
	}
	return putDelivery(ctx, tx, d)
}

func putDelivery(ctx context.Context, tx pgx.Tx, d *store.Delivery) error {
	data, err := json.Marshal(d)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE deliveries SET state = $2, value = $3, lease_until = NULL WHERE id = $1`, d.ID, d.State, data)
	return err
}

func decodeDelivery(id, tx, seq int64, data []byte) (store.Delivery, error) {
	var d store.Delivery
	err := json.Unmarshal(data, &d)
	d.ID = id
	d.EventID = store.EventID{Tx: uint64(tx), Seq: uint64(seq)}
	return d, err
}

// scanDelivery reads a row of id, event_tx, event_seq and value.
func scanDelivery(r pgx.CollectableRow) (store.Delivery, error) {
	var id, tx, seq int64
	var v []byte
	if err := r.Scan(&id, &tx, &seq, &v); err != nil {
		return store.Delivery{}, err
	}
	return decodeDelivery(id, tx, seq, v)
}

// newEventsQuery answers whether events were recorded past the fan-out's
// mark. Every instance asks it at every poll, so it must cost what is new,
// not what is kept: asked as a join, the planner reads the whole table;
// asked for the first event after the mark in the primary key's order, it
// reads the index from the mark on (eventcost_test.go).
const newEventsQuery = `SELECT EXISTS (SELECT 1 FROM event_dispatch d CROSS JOIN LATERAL (
		SELECT 1 FROM events e WHERE (e.tx, e.seq) > (d.tx, d.seq) AND e.` + visible + `
		ORDER BY e.tx, e.seq LIMIT 1) n
	WHERE d.id = 1)`

// newEvents asks newEventsQuery, giving way to a lock as FanOut does. As
// one simple query, one implicit transaction, SET LOCAL holds for it alone
// (a batch of the extended protocol may be several).
func (db *DB) newEvents(ctx context.Context) (bool, error) {
	pending, err := again(db.pool, func() (bool, error) {
		conn, release, err := db.pool.acquire(ctx)
		if err != nil {
			return false, err
		}
		defer release()
		sctx, cancel := db.pool.statement(ctx)
		defer cancel()
		results, err := conn.Conn().PgConn().Exec(sctx, newEventsGivingWay).ReadAll()
		if err != nil {
			return false, err
		}
		if len(results) != 2 || len(results[1].Rows) != 1 || len(results[1].Rows[0]) != 1 {
			return false, fmt.Errorf("the query for new events answered %d results", len(results))
		}
		return string(results[1].Rows[0][0]) == "t", nil
	})
	return pending, db.pool.fail(ctx, err)
}

var newEventsGivingWay = `SET LOCAL lock_timeout = ` + strconv.FormatInt(lockGiveWay.Milliseconds(), 10) + `; ` + newEventsQuery

// FanOut: the dispatch row's lock makes one instance at a time do it.
func (db *DB) FanOut(ctx context.Context, now time.Time, limit int) (int, error) {
	// Most calls find nothing new: one query answers them.
	if pending, err := db.newEvents(ctx); err != nil || !pending {
		return 0, err
	}
	n := 0
	err := db.txWith(ctx, giveWay, func(tx pgx.Tx) error {
		n = 0
		var lastTx, lastSeq int64
		// Another instance fanning out has the row: it does this round.
		err := tx.QueryRow(ctx, `SELECT tx, seq FROM event_dispatch WHERE id = 1 FOR UPDATE SKIP LOCKED`).Scan(&lastTx, &lastSeq)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		type routed struct {
			e  store.Event
			to int64
		}
		evs, err := queryRows(ctx, tx, func(r pgx.CollectableRow) (routed, error) {
			e, to, err := scanEvent(r)
			return routed{e, to}, err
		}, `SELECT `+eventCols+` FROM events WHERE (tx, seq) > ($1, $2) AND `+visible+`
			ORDER BY tx, seq LIMIT $3`, lastTx, lastSeq, limit)
		if err != nil || len(evs) == 0 {
			return err
		}
		hooks, err := queryRows(ctx, tx, webhookRow, `SELECT id, value FROM webhooks ORDER BY id`)
		if err != nil {
			return err
		}
		var hookIDs, txs, seqs []int64
		var types []string
		for _, ev := range evs {
			for i := range hooks {
				if store.Routes(&ev.e, ev.to, &hooks[i]) {
					hookIDs = append(hookIDs, hooks[i].ID)
					txs = append(txs, int64(ev.e.ID.Tx))
					seqs = append(seqs, int64(ev.e.ID.Seq))
					types = append(types, ev.e.Type)
				}
			}
		}
		if len(hookIDs) > 0 {
			// The value in the form putDelivery writes.
			if _, err := tx.Exec(ctx, `INSERT INTO deliveries (webhook_id, event_tx, event_seq, state, scheduled_at, value)
				SELECT h, t, s, 'pending', $5, convert_to(json_build_object('webhookId', h, 'eventType', y, 'attempt', 1,
					'state', 'pending', 'scheduledAt', $6::text)::text, 'UTF8')
				FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[]) AS u(h, t, s, y)`,
				hookIDs, txs, seqs, types, now, now.UTC().Format(time.RFC3339Nano)); err != nil {
				return err
			}
		}
		last := evs[len(evs)-1].e.ID
		n = len(evs)
		_, err = tx.Exec(ctx, `UPDATE event_dispatch SET tx = $1, seq = $2 WHERE id = 1`, int64(last.Tx), int64(last.Seq))
		return err
	})
	return n, err
}

// leaseEnded: no attempt holds the delivery, on the clock instances share.
// Due times stay the callers': skew makes a retry early or late, not twice.
const leaseEnded = `(lease_until IS NULL OR lease_until <= now())`

// ClaimDeliveries leases the deliveries due at now, at most
// MaxInFlightPerWebhook of each webhook with busy's in flight. The lease is
// tested again beside FOR UPDATE: PostgreSQL rechecks a row another claim
// leased meanwhile only against the conditions of the level that locks it.
func (db *DB) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, busy []int64, limit int) ([]store.Claimed, error) {
	return queryRows(ctx, db.pool, func(r pgx.CollectableRow) (store.Claimed, error) {
		var c store.Claimed
		var id, etx, eseq, wid, wasTx, wasSeq int64
		var dv, data, wv []byte
		if err := r.Scan(&id, &etx, &eseq, &dv, &c.Event.Type, &c.Event.CreatedAt, &data, &wid, &wv, &wasTx, &wasSeq); err != nil {
			return c, err
		}
		var err error
		if c.Delivery, err = decodeDelivery(id, etx, eseq, dv); err != nil {
			return c, err
		}
		c.Event.ID, c.Event.Data, c.Event.CreatedAt = c.Delivery.EventID, data, c.Event.CreatedAt.UTC()
		if wasTx != 0 || wasSeq != 0 {
			// An event a file numbered again goes out under its old id.
			c.Event.ID = store.EventID{Tx: uint64(wasTx), Seq: uint64(wasSeq)}
		}
		if err := json.Unmarshal(wv, &c.Webhook); err != nil {
			return c, err
		}
		c.Webhook.ID = wid
		return c, nil
	}, `UPDATE deliveries d SET lease_until = now() + $2::interval
		FROM events e, webhooks w
		WHERE d.id IN (
			SELECT id FROM deliveries WHERE id IN (
				SELECT id FROM (
					SELECT id, webhook_id, row_number() OVER (PARTITION BY webhook_id ORDER BY scheduled_at, id) AS n
					FROM deliveries
					WHERE state = 'pending' AND scheduled_at <= $1 AND `+leaseEnded+`) r
				LEFT JOIN (SELECT b, count(*) AS k FROM unnest($3::bigint[]) b GROUP BY b) f ON f.b = r.webhook_id
				WHERE n + COALESCE(f.k, 0) <= $5)
			AND state = 'pending' AND `+leaseEnded+`
			ORDER BY scheduled_at LIMIT $4 FOR UPDATE SKIP LOCKED)
		AND e.tx = d.event_tx AND e.seq = d.event_seq AND w.id = d.webhook_id
		RETURNING d.id, d.event_tx, d.event_seq, d.value, e.type, e.created_at, e.data, w.id, w.value, COALESCE(e.was_tx, 0), COALESCE(e.was_seq, 0)`,
		now, lease, busy, limit, store.MaxInFlightPerWebhook)
}

func (db *DB) FinishDeliveries(ctx context.Context, done []store.Finished) error {
	ids := make([]int64, len(done))
	for i, f := range done {
		ids[i] = f.Claimed.ID
	}
	return db.tx(ctx, func(tx pgx.Tx) error {
		// Locked in id order, so that two instances' batches cannot
		// deadlock on each other's rows.
		found, err := queryRows(ctx, tx, scanDelivery, `SELECT id, event_tx, event_seq, value FROM deliveries WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`, ids)
		if err != nil {
			return err
		}
		byID := make(map[int64]*store.Delivery, len(found))
		var hookIDs []int64
		for i := range found {
			byID[found[i].ID] = &found[i]
			hookIDs = append(hookIDs, found[i].WebhookID)
		}
		hooks, err := queryRows(ctx, tx, webhookRow, `SELECT id, value FROM webhooks WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`, hookIDs)
		if err != nil {
			return err
		}
		before := make(map[int64]store.Webhook, len(hooks))
		after := make(map[int64]*store.Webhook, len(hooks))
		for i := range hooks {
			before[hooks[i].ID], after[hooks[i].ID] = hooks[i], &hooks[i]
		}
		put := func(d *store.Delivery) error {
			if d.ID == 0 {
				return insertDelivery(ctx, tx, d)
			}
			return putDelivery(ctx, tx, d)
		}
		end := func(d *store.Delivery) error { return endSchedule(ctx, tx, d) }
		disabled := func(w store.Webhook) error { return emit(tx, store.EventWebhookDisabled, w) }
		for _, f := range done {
			d := byID[f.Claimed.ID]
			if d == nil || d.State != store.DeliveryPending {
				continue // deleted with its webhook, pruned, or finished by another attempt
			}
			w := after[d.WebhookID]
			if w == nil {
				continue
			}
			if err := store.FinishAttempt(d, w, f.Outcome, put, end, disabled); err != nil {
				return err
			}
		}
		for i := range hooks {
			if b := before[hooks[i].ID]; store.WebhookChanged(&b, &hooks[i]) {
				if err := putWebhook(ctx, tx, &hooks[i]); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// endSchedule deletes the scheduled attempts still pending of d's event
// to d's webhook, but for one another instance is recording.
func endSchedule(ctx context.Context, tx pgx.Tx, d *store.Delivery) error {
	pending, err := queryRows(ctx, tx, scanDelivery, `SELECT id, event_tx, event_seq, value FROM deliveries
		WHERE webhook_id = $1 AND event_tx = $2 AND event_seq = $3 AND state = 'pending' AND id <> $4
		FOR UPDATE SKIP LOCKED`, d.WebhookID, int64(d.EventID.Tx), int64(d.EventID.Seq), d.ID)
	if err != nil {
		return err
	}
	var ids []int64
	for i := range pending {
		if store.InSchedule(&pending[i], d) {
			ids = append(ids, pending[i].ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	_, err = tx.Exec(ctx, `DELETE FROM deliveries WHERE id = ANY($1::bigint[])`, ids)
	return err
}

func (db *DB) Deliveries(ctx context.Context, webhookID int64, p store.Page) ([]store.Delivery, int64, error) {
	if _, err := db.Webhook(ctx, webhookID); err != nil {
		return nil, 0, err
	}
	after := p.After
	if after <= 0 {
		after = 1<<63 - 1
	}
	size := p.Size()
	out, err := queryRows(ctx, db.pool, scanDelivery, `SELECT id, event_tx, event_seq, value FROM deliveries
		WHERE webhook_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3`, webhookID, after, size+1)
	var next int64
	if len(out) > size {
		out = out[:size]
		next = out[size-1].ID
	}
	return out, next, err
}

func (db *DB) RetryDelivery(ctx context.Context, webhookID, id int64, now time.Time, key *store.IdempotentWrite) (store.Delivery, error) {
	var out store.Delivery
	err := db.tx(ctx, func(tx pgx.Tx) error {
		return db.keyed(ctx, tx, key, func() error {
			var etx, eseq, wid int64
			var dv []byte
			err := tx.QueryRow(ctx, `SELECT event_tx, event_seq, webhook_id, value FROM deliveries WHERE id = $1`, id).Scan(&etx, &eseq, &wid, &dv)
			if err != nil {
				return notFound(err, store.NotFound("delivery", id))
			}
			if wid != webhookID {
				return store.NotFound("delivery", id)
			}
			d, err := decodeDelivery(id, etx, eseq, dv)
			if err != nil {
				return err
			}
			var kept bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE tx = $1 AND seq = $2)`, etx, eseq).Scan(&kept); err != nil {
				return err
			}
			if !kept {
				return store.EventPruned(d.EventID)
			}
			out = store.ManualRetry(&d, now)
			return insertDelivery(ctx, tx, &out)
		}, func() (any, any) { return &out, out.EventID })
	})
	return out, err
}
