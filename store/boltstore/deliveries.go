package boltstore

// The deliveries of webhooks: the fan-out of events, the claims and
// their outcomes, and the listing and retry of attempts.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"time"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

func (db *DB) FanOut(ctx context.Context, now time.Time, limit int) (int, error) {
	// Most calls find nothing new: a read answers them, without a commit.
	pending, err := readValue(ctx, db, func(tx *bolt.Tx) (bool, error) {
		k, _ := tx.Bucket(bktEvents).Cursor().Last()
		return k != nil && binary.BigEndian.Uint64(k) > dispatched(tx), nil
	})
	if err != nil || !pending {
		return 0, err
	}
	var made []freshDelivery // by the last run of the write, which committed
	n, err := writeValue(ctx, db, func(tx *bolt.Tx) (int, error) {
		made = made[:0]
		last := dispatched(tx)
		var hooks []store.Webhook
		if err := tx.Bucket(bktWebhooks).ForEach(func(k, v []byte) error {
			w, err := webhookTable.decode(btoi(k), v)
			if w.Enabled {
				hooks = append(hooks, w)
			}
			return err
		}); err != nil {
			return 0, err
		}
		start := idKey(int64(last + 1))
		c := tx.Bucket(bktEvents).Cursor()
		n := 0
		for k, v := c.Seek(start[:]); k != nil && n < limit; k, v = c.Next() {
			e, to, err := decodeEvent(k, v)
			if err != nil {
				return n, err
			}
			last = e.ID.Seq
			n++
			for i := range hooks {
				if !store.Routes(&e, to, &hooks[i]) {
					continue
				}
				r := deliveryRecord{Delivery: store.Delivery{
					WebhookID: hooks[i].ID, EventID: e.ID, EventType: e.Type,
					Attempt: 1, State: store.DeliveryPending, ScheduledAt: now.UTC(),
				}}
				if err := putDelivery(tx, &r); err != nil {
					return n, err
				}
				made = append(made, freshDelivery{r, e})
			}
		}
		if n == 0 {
			return 0, nil
		}
		return n, tx.Bucket(bktMeta).Put(metaDispatched, binary.BigEndian.AppendUint64(nil, last))
	})
	if err == nil && len(made) > 0 {
		l := &db.deliveryLeases
		l.mu.Lock()
		for i := range made {
			l.fresh.Add(made[i].r.ID, &made[i])
		}
		l.mu.Unlock()
	}
	return n, err
}

// dispatched is the seq of the last event fanned out.
func dispatched(tx *bolt.Tx) uint64 {
	if v := tx.Bucket(bktMeta).Get(metaDispatched); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (db *DB) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, busy []int64, limit int) ([]store.Claimed, error) {
	l, at := &db.deliveryLeases, time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []store.Claimed
	perHook := map[int64]int{}
	hooks := map[int64]store.Webhook{} // decoded once per claim
	err := db.read(ctx, func(tx *bolt.Tx) error {
		// Most claims, those of an idle engine's polls, find nothing due.
		if k, _ := tx.Bucket(bktDeliveriesDue).Cursor().First(); k == nil || len(k) == 24 && int64(binary.BigEndian.Uint64(k)) > now.UnixNano() {
			return nil
		}
		// The index is in time order, every webhook's deliveries mixed:
		// once each webhook is busy or has its share, the rest is not read.
		open := map[int64]bool{} // the webhooks that may get more
		wc := tx.Bucket(bktWebhooks).Cursor()
		for k, _ := wc.First(); k != nil; k, _ = wc.Next() {
			open[btoi(k)] = true
		}
		for _, id := range busy {
			if perHook[id]++; perHook[id] >= store.MaxInFlightPerWebhook {
				delete(open, id)
			}
		}
		sentAs := wasBucket(tx)
		c := tx.Bucket(bktDeliveriesDue).Cursor()
		for k, _ := c.First(); k != nil && len(out) < limit && len(open) > 0; k, _ = c.Next() {
			if len(k) != 24 || int64(binary.BigEndian.Uint64(k)) > now.UnixNano() {
				break
			}
			hook, id := btoi(k[8:16]), btoi(k[16:])
			if !open[hook] {
				continue
			}
			if until, ok := l.until[id]; ok && until.After(at) {
				continue
			}
			var r deliveryRecord
			var e store.Event
			var err error
			f, fresh := l.fresh.Peek(id)
			if fresh {
				l.fresh.Remove(id)
				r, e = f.r, f.e
			} else if r, err = getDelivery(tx, id); err != nil {
				return corrupt(err)
			}
			w, ok := hooks[hook]
			if !ok {
				if w, err = l.webhook(tx, hook); err != nil {
					continue
				}
				hooks[hook] = w
			}
			if !fresh {
				ek := idKey(int64(r.EventID.Seq))
				v := tx.Bucket(bktEvents).Get(ek[:])
				if v == nil {
					continue // pruned; PruneEvents deletes the delivery too
				}
				if e, _, err = decodeEvent(ek[:], v); err != nil {
					return err
				}
			}
			if perHook[hook]++; perHook[hook] >= store.MaxInFlightPerWebhook {
				delete(open, hook)
			}
			if was := wasID(sentAs, e.ID.Seq); !was.IsZero() {
				e.ID = was // the id its deliveries go out under
			}
			out = append(out, store.Claimed{Delivery: r.Delivery, Event: e, Webhook: w})
			l.until[r.ID] = at.Add(lease)
		}
		return nil
	})
	return out, err
}

func (db *DB) FinishDeliveries(ctx context.Context, done []store.Finished) error {
	defer func() {
		l := &db.deliveryLeases
		l.mu.Lock()
		for _, f := range done {
			delete(l.until, f.Claimed.ID)
		}
		l.mu.Unlock()
	}()
	return db.write(ctx, func(tx *bolt.Tx) error {
		// Each webhook is read and written once, whatever the number of
		// its outcomes.
		hooks := map[int64]*[2]store.Webhook{} // before, after
		var order []int64
		due := tx.Bucket(bktDeliveriesDue)
		put := func(d *store.Delivery) error { return putDelivery(tx, &deliveryRecord{Delivery: *d}) }
		end := func(d *store.Delivery) error { return endSchedule(tx, d) }
		disabled := func(w store.Webhook) error { return db.emit(tx, store.EventWebhookDisabled, w) }
		for _, f := range done {
			// This process's lease on a pending delivery still holds: the
			// record is the one claimed, if it is still in the due index.
			r := deliveryRecord{Delivery: f.Claimed.Delivery}
			if r.State != store.DeliveryPending || due.Get(dueKey(&r)) == nil {
				continue
			}
			w, ok := hooks[r.WebhookID]
			if !ok {
				hook, err := webhookTable.get(tx, r.WebhookID)
				if store.ErrorCode(err) == store.ENOTFOUND {
					continue
				}
				if err != nil {
					return err
				}
				w = &[2]store.Webhook{hook, hook}
				hooks[r.WebhookID] = w
				order = append(order, r.WebhookID)
			}
			if err := store.FinishAttempt(&r.Delivery, &w[1], f.Outcome, put, end, disabled); err != nil {
				return err
			}
		}
		for _, id := range order {
			if w := hooks[id]; store.WebhookChanged(&w[0], &w[1]) {
				if err := putJSON(tx.Bucket(bktWebhooks), id, &w[1]); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// endSchedule deletes the scheduled attempts still pending of d's event
// to d's webhook, reading the due index through: an operator's retry that
// succeeded is rare.
func endSchedule(tx *bolt.Tx, d *store.Delivery) error {
	var ids []int64
	c := tx.Bucket(bktDeliveriesDue).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) != 24 || btoi(k[8:16]) != d.WebhookID || btoi(k[16:]) == d.ID {
			continue
		}
		r, err := getDelivery(tx, btoi(k[16:]))
		if err != nil {
			return corrupt(err)
		}
		if store.InSchedule(&r.Delivery, d) {
			ids = append(ids, r.ID)
		}
	}
	return deleteDeliveries(tx, ids)
}

func (db *DB) Deliveries(ctx context.Context, webhookID int64, p store.Page) ([]store.Delivery, int64, error) {
	size := p.Size()
	var out []store.Delivery
	var next int64
	err := db.read(ctx, func(tx *bolt.Tx) error {
		if _, err := webhookTable.get(tx, webhookID); err != nil {
			return err
		}
		c := tx.Bucket(bktDeliveriesWebhook).Cursor()
		after := p.After
		if after <= 0 {
			after = 1<<63 - 1
		}
		k, _ := c.Seek(appendID(itob(webhookID), after))
		if k == nil || btoi(k[:8]) != webhookID || btoi(k[8:]) >= after {
			k, _ = c.Prev()
		}
		for ; k != nil && btoi(k[:8]) == webhookID; k, _ = c.Prev() {
			if len(out) == size {
				next = out[size-1].ID
				break
			}
			r, err := getDelivery(tx, btoi(k[8:]))
			if err != nil {
				return corrupt(err)
			}
			out = append(out, r.Delivery)
		}
		return nil
	})
	return out, next, err
}

func (db *DB) RetryDelivery(ctx context.Context, webhookID, id int64, now time.Time, key *store.IdempotentWrite) (store.Delivery, error) {
	return keyedValue(ctx, db, key, func(tx *bolt.Tx) (store.Delivery, error) {
		r, err := getDelivery(tx, id)
		if err != nil || r.WebhookID != webhookID {
			return store.Delivery{}, store.NotFound("delivery", id)
		}
		ek := idKey(int64(r.EventID.Seq))
		if tx.Bucket(bktEvents).Get(ek[:]) == nil {
			return store.Delivery{}, store.EventPruned(r.EventID)
		}
		next := deliveryRecord{Delivery: store.ManualRetry(&r.Delivery, now)}
		err = putDelivery(tx, &next) // sets next.ID
		return next.Delivery, err
	}, func(d *store.Delivery) any { return d.EventID })
}

// pruneDeliveries deletes up to limit finished deliveries scheduled before t.
func pruneDeliveries(tx *bolt.Tx, t time.Time, limit int) (int, error) {
	var ids []int64
	c := tx.Bucket(bktDeliveries).Cursor()
	for k, v := c.First(); k != nil && len(ids) < limit; k, v = c.Next() {
		var r deliveryRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return 0, err
		}
		if r.State == store.DeliveryPending || !r.ScheduledAt.Before(t) {
			break
		}
		ids = append(ids, r.ID)
	}
	return len(ids), deleteDeliveries(tx, ids)
}
