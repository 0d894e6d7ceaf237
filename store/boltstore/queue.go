package boltstore

import (
	"context"
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// WebhookQueue reads the pending deliveries from the due index and the
// webhooks. It reads each pending delivery, so it stops when ctx ends.
func (db *DB) WebhookQueue(ctx context.Context, now time.Time) (store.WebhookQueue, error) {
	var q store.WebhookQueue
	// Deliveries under an attempt's lease are taken, not due.
	l, at := &db.deliveryLeases, time.Now()
	l.mu.Lock()
	leased := make(map[int64]bool, len(l.until))
	for id, until := range l.until {
		leased[id] = until.After(at)
	}
	l.mu.Unlock()
	err := db.read(ctx, func(tx *bolt.Tx) error {
		q = store.WebhookQueue{EventsRecorded: int64(tx.Bucket(bktEvents).Sequence())}
		if err := tx.Bucket(bktWebhooks).ForEach(func(k, v []byte) error {
			w, err := webhookTable.decode(btoi(k), v)
			q.CountWebhook(&w)
			return err
		}); err != nil {
			return err
		}
		var oldestSeq uint64
		// Each webhook's oldest due delivery, and its attempts under way.
		oldestDue, taken := map[int64]time.Time{}, map[int64]int{}
		c := tx.Bucket(bktDeliveriesDue).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(k) != 24 {
				continue
			}
			if q.Pending++; q.Pending%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			r, err := getDelivery(tx, btoi(k[16:]))
			if err != nil {
				return corrupt(err)
			}
			if leased[r.ID] {
				taken[r.WebhookID]++
			} else if at := int64(binary.BigEndian.Uint64(k)); at <= now.UnixNano() {
				q.Due++
				if _, ok := oldestDue[r.WebhookID]; !ok {
					oldestDue[r.WebhookID] = time.Unix(0, at).UTC()
				}
			}
			if oldestSeq == 0 || r.EventID.Seq < oldestSeq {
				oldestSeq = r.EventID.Seq
			}
		}
		for id, at := range oldestDue {
			if taken[id] < store.MaxInFlightPerWebhook && (q.OldestDue.IsZero() || at.Before(q.OldestDue)) {
				q.OldestDue = at
			}
		}
		if oldestSeq != 0 {
			ek := idKey(int64(oldestSeq))
			if v := tx.Bucket(bktEvents).Get(ek[:]); v != nil {
				e, _, err := decodeEvent(ek[:], v)
				if err != nil {
					return err
				}
				q.OldestPendingEvent = e.CreatedAt
			}
		}
		return nil
	})
	return q, err
}
