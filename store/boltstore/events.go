package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// The outbox. Every write that changes an entity calls emit in its own
// transaction. Writes commit one at a time, so the bucket's sequence
// orders events by commit: a cursor never passes an event that commits
// later.
//
//	events   seq8 -> createdAt(unix ns)8 to8 len(type)1 type data
var bktEvents = []byte("events")

// emit records the event of a change in the write's transaction.
func (db *DB) emit(tx *bolt.Tx, typ string, data any) error {
	e, err := store.NewEvent(typ, data)
	if err != nil {
		return err
	}
	_, err = db.putEvent(tx, e, 0)
	return err
}

// putEvent stores e, for every subscriber or, with to, for one webhook.
func (db *DB) putEvent(tx *bolt.Tx, e store.PendingEvent, to int64) (store.Event, error) {
	b := tx.Bucket(bktEvents)
	seq, err := b.NextSequence()
	if err != nil {
		return store.Event{}, err
	}
	now := db.now().UTC()
	k, v := encodeEvent(seq, now, to, e.Type, e.Data)
	b.FillPercent = appendFill
	if err := b.Put(k, v); err != nil {
		return store.Event{}, err
	}
	return store.Event{ID: store.EventID{Seq: seq}, Type: e.Type, CreatedAt: now, Data: e.Data}, nil
}

// encodeEvent is an event's key and value, in one allocation.
func encodeEvent(seq uint64, createdAt time.Time, to int64, typ string, data []byte) (k, v []byte) {
	buf := make([]byte, 8, 8+8+8+1+len(typ)+len(data))
	binary.BigEndian.PutUint64(buf, seq)
	buf = binary.BigEndian.AppendUint64(buf, uint64(createdAt.UnixNano()))
	buf = binary.BigEndian.AppendUint64(buf, uint64(to))
	buf = append(buf, byte(len(typ)))
	buf = append(buf, typ...)
	buf = append(buf, data...)
	return buf[:8], buf[8:]
}

// decodeEvent reads a stored event, and the webhook it is for (0: all).
func decodeEvent(k, v []byte) (store.Event, int64, error) {
	if len(k) != 8 || len(v) < 17 || len(v) < 17+int(v[16]) {
		return store.Event{}, 0, fmt.Errorf("store: event %x is damaged", k)
	}
	n := int(v[16])
	return store.Event{
		ID:        store.EventID{Seq: binary.BigEndian.Uint64(k)},
		CreatedAt: time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC(),
		Type:      string(v[17 : 17+n]),
		Data:      bytes.Clone(v[17+n:]),
	}, int64(binary.BigEndian.Uint64(v[8:])), nil
}

func (db *DB) Events(ctx context.Context, f store.EventFilter) ([]store.Event, error) {
	limit := store.Page{Limit: f.Limit}.Size()
	var out []store.Event
	err := db.read(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bktEvents).Cursor()
		// An id of another store (Tx set) comes after every event here.
		if f.After.Tx != 0 {
			return nil
		}
		start := idKey(int64(f.After.Seq + 1))
		for k, v := c.Seek(start[:]); k != nil && len(out) < limit; k, v = c.Next() {
			if !f.Matches(string(v[17 : 17+int(v[16])])) {
				continue
			}
			e, _, err := decodeEvent(k, v)
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

func (db *DB) OldestEvent(ctx context.Context) (store.EventID, error) {
	return db.eventAt(ctx, (*bolt.Cursor).First)
}

func (db *DB) NewestEvent(ctx context.Context) (store.EventID, error) {
	return db.eventAt(ctx, (*bolt.Cursor).Last)
}

// eventAt is the id of the event that move finds, the zero id for none.
func (db *DB) eventAt(ctx context.Context, move func(*bolt.Cursor) ([]byte, []byte)) (store.EventID, error) {
	return readValue(ctx, db, func(tx *bolt.Tx) (store.EventID, error) {
		if k, _ := move(tx.Bucket(bktEvents).Cursor()); k != nil {
			return store.EventID{Seq: binary.BigEndian.Uint64(k)}, nil
		}
		return store.EventID{}, nil
	})
}

func (db *DB) RecordEvent(ctx context.Context, e store.PendingEvent, to int64, key *store.IdempotentWrite) (store.Event, error) {
	return keyedValue(ctx, db, key, func(tx *bolt.Tx) (store.Event, error) { return db.putEvent(tx, e, to) }, nil)
}

// pruneBatch bounds one pruning transaction, so that it never holds the
// writer for long.
const pruneBatch = 1000

func (db *DB) PruneEvents(ctx context.Context, t time.Time) (int, error) {
	total := 0
	for {
		n, err := writeValue(ctx, db, func(tx *bolt.Tx) (int, error) {
			var old [][]byte
			c := tx.Bucket(bktEvents).Cursor()
			for k, v := c.First(); k != nil && len(old) < pruneBatch; k, v = c.Next() {
				if len(v) < 8 || !time.Unix(0, int64(binary.BigEndian.Uint64(v))).Before(t) {
					break
				}
				old = append(old, k)
			}
			// Deleted after the walk: a cursor may skip keys deleted under it.
			for _, k := range old {
				if err := deleteKeys(tx, indexEntry{bktEvents, k}, indexEntry{bktEventsWas, k}); err != nil {
					return 0, err
				}
			}
			n := len(old)
			m, err := pruneDeliveries(tx, t, pruneBatch-n)
			return n + m, err
		})
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
	}
}

// emitDomain records the events of a domain's change (old nil: added).
func (db *DB) emitDomain(tx *bolt.Tx, old, updated *store.Domain) error {
	for _, typ := range store.DomainEvents(old, updated) {
		if err := db.emit(tx, typ, updated); err != nil {
			return err
		}
	}
	return nil
}
