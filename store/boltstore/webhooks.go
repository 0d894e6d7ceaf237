package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"petstore/bounded"
	"petstore/store"
)

// Webhooks and their deliveries. A pending delivery is also in the due
// index. One process owns the file, so its leases are in memory, on its
// clock: a restart forgets them, and the attempts they covered are made again.
//
//	webhooks                   id8 -> JSON
//	deliveries                 id8 -> JSON (deliveryRecord)
//	idx_deliveries_webhook     webhook8 delivery8
//	idx_deliveries_due         scheduledAt(unix ns)8 webhook8 delivery8
//	meta events_dispatched     the seq8 of the last event fanned out
var (
	bktWebhooks          = []byte("webhooks")
	bktDeliveries        = []byte("deliveries")
	bktDeliveriesWebhook = []byte("idx_deliveries_webhook")
	bktDeliveriesDue     = []byte("idx_deliveries_due")
	metaDispatched       = []byte("events_dispatched")
)

var webhookTable = table[store.Webhook]{bucket: bktWebhooks, decode: decodeJSONRecord[store.Webhook], what: "webhook",
	fields: func(w *store.Webhook) (*int64, *int64) { return &w.ID, nil },
	put:    func(b *bolt.Bucket, w *store.Webhook) error { return putJSON(b, w.ID, w) }}

// deliveryRecord is a stored delivery, with its event's seq.
type deliveryRecord struct {
	store.Delivery
	EventSeq uint64 `json:"eventSeq"`
}

// leases are the deliveries this process is attempting.
type leases struct {
	mu    sync.Mutex
	until map[int64]time.Time
	// fresh are the deliveries FanOut made, with their events, so that a
	// claim decodes neither. A pending delivery's record changes only with
	// its removal from the due index, where a claim finds it: an entry
	// here is the record on disk while its id is in the index.
	fresh *bounded.Cache[int64, *freshDelivery]
	// hooks are the webhooks claims decoded, with their stored bytes: a
	// claim decodes a webhook again only when those changed.
	hooks *bounded.Cache[int64, decodedWebhook]
}

type decodedWebhook struct {
	raw []byte
	w   store.Webhook
}

const maxDecodedWebhooks = 1024

// webhook is webhook id as stored in tx, decoded once per version; l.mu is
// held. Its slices are shared with other claims': nothing writes them.
func (l *leases) webhook(tx *bolt.Tx, id int64) (store.Webhook, error) {
	k := idKey(id)
	v := tx.Bucket(bktWebhooks).Get(k[:])
	if v == nil {
		return store.Webhook{}, store.NotFound(webhookTable.what, id)
	}
	if d, ok := l.hooks.Get(id); ok && bytes.Equal(d.raw, v) {
		return d.w, nil
	}
	w, err := webhookTable.decode(id, v)
	if err != nil {
		return w, err
	}
	l.hooks.Add(id, decodedWebhook{raw: bytes.Clone(v), w: w})
	return w, nil
}

type freshDelivery struct {
	r deliveryRecord
	e store.Event
}

// maxFresh bounds the fresh deliveries kept; past it, a claim reads the
// file instead.
const maxFresh = 1 << 14

func getDelivery(tx *bolt.Tx, id int64) (deliveryRecord, error) {
	k := idKey(id)
	v := tx.Bucket(bktDeliveries).Get(k[:])
	if v == nil {
		return deliveryRecord{}, store.NotFound("delivery", id)
	}
	var r deliveryRecord
	err := json.Unmarshal(v, &r)
	r.EventID = store.EventID{Seq: r.EventSeq}
	return r, err
}

// dueKey carries the webhook, so that a claim skips a busy webhook's
// deliveries without reading them.
func dueKey(r *deliveryRecord) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 24), uint64(r.ScheduledAt.UnixNano()))
	return appendID(appendID(k, r.WebhookID), r.ID)
}

// putDelivery stores r with its index entries; a new one (ID 0) gets an id.
func putDelivery(tx *bolt.Tx, r *deliveryRecord) error {
	b := tx.Bucket(bktDeliveries)
	if r.ID == 0 {
		id, err := nextID(b)
		if err != nil {
			return err
		}
		r.ID = id
		if err := tx.Bucket(bktDeliveriesWebhook).Put(appendID(itob(r.WebhookID), id), empty); err != nil {
			return err
		}
	}
	due := tx.Bucket(bktDeliveriesDue)
	if r.State == store.DeliveryPending {
		if err := due.Put(dueKey(r), empty); err != nil {
			return err
		}
	} else if err := due.Delete(dueKey(r)); err != nil {
		return err
	}
	r.EventSeq = r.EventID.Seq
	b.FillPercent = appendFill
	data, err := encodeDelivery(r)
	if err != nil {
		return err
	}
	return b.Put(itob(r.ID), data)
}

// encodeDelivery is json.Marshal(r), without its reflection.
func encodeDelivery(r *deliveryRecord) ([]byte, error) {
	b, err := r.Delivery.AppendJSON(make([]byte, 0, 256))
	if err != nil {
		return nil, err
	}
	b = append(b[:len(b)-1], `,"eventSeq":`...)
	return append(strconv.AppendUint(b, r.EventSeq, 10), '}'), nil
}

func (db *DB) CreateWebhook(ctx context.Context, w *store.Webhook, key *store.IdempotentWrite) error {
	in := *w
	in.CreatedAt = db.now().UTC().Truncate(time.Microsecond) // precise: Routes compares it with events' times
	return create(ctx, db, w, in, key, webhookTable.insert)
}

func (db *DB) Webhook(ctx context.Context, id int64) (store.Webhook, error) {
	return webhookTable.read(ctx, db, id)
}

func (db *DB) Webhooks(ctx context.Context, p store.Page) ([]store.Webhook, int64, error) {
	return webhookTable.page(ctx, db, nil, nil, p)
}

func (db *DB) UpdateWebhook(ctx context.Context, id int64, fn func(*store.Webhook) error, key *store.IdempotentWrite) (store.Webhook, error) {
	return keyedValue(ctx, db, key, func(tx *bolt.Tx) (store.Webhook, error) {
		w, err := webhookTable.get(tx, id)
		if err != nil {
			return w, err
		}
		if err := fn(&w); err != nil {
			return w, refusal{err}
		}
		w.ID = id
		return w, putJSON(tx.Bucket(bktWebhooks), id, &w)
	}, nil)
}

func (db *DB) DeleteWebhook(ctx context.Context, id int64) error {
	return db.write(ctx, func(tx *bolt.Tx) error {
		if _, err := webhookTable.get(tx, id); err != nil {
			return err
		}
		var ids []int64
		prefix := itob(id)
		c := tx.Bucket(bktDeliveriesWebhook).Cursor()
		for k, _ := c.Seek(prefix); len(k) == 16 && btoi(k[:8]) == id; k, _ = c.Next() {
			ids = append(ids, btoi(k[8:]))
		}
		if err := deleteDeliveries(tx, ids); err != nil {
			return err
		}
		return tx.Bucket(bktWebhooks).Delete(prefix)
	})
}

// deleteDeliveries deletes these deliveries, collected before: deleting
// under a cursor can skip the next key.
func deleteDeliveries(tx *bolt.Tx, ids []int64) error {
	for _, id := range ids {
		r, err := getDelivery(tx, id)
		if err != nil {
			return corrupt(err)
		}
		err = deleteKeys(tx, indexEntry{bktDeliveriesDue, dueKey(&r)},
			indexEntry{bktDeliveriesWebhook, appendID(itob(r.WebhookID), id)}, indexEntry{bktDeliveries, itob(id)})
		if err != nil {
			return err
		}
	}
	return nil
}
