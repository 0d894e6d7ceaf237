package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// Events that a file took from PostgreSQL (Import) are numbered again
// after the file's own (Tx 0). Clients may still hold their PostgreSQL ids
// as cursors: this bucket maps each to its new number, and the id below
// every moved one (all zero) to the last number before them, so that a
// cursor resumes where PostgreSQL would have.
//
//	events_moved   tx8 seq8 -> seq8
var bktEventsMoved = []byte("events_moved")

// A moved event keeps, in this bucket, the id it had on PostgreSQL, which
// its deliveries go on being sent under: a receiver deduplicates on it.
//
//	events_was   seq8 -> tx8 seq8
var bktEventsWas = []byte("events_was")

func movedKey(id store.EventID) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(make([]byte, 0, 16), id.Tx), id.Seq)
}

// putEvent writes an event the stream gives: a file's own keeps its id,
// one PostgreSQL numbered is numbered again after every id given so far.
func (in *importer) putEvent(tx *bolt.Tx, r *store.StoredEvent) error {
	seq := r.ID.Seq
	moved := tx.Bucket(bktEventsMoved)
	was := r.Was // a file's event that an earlier move back numbered again
	if r.ID.Tx != 0 {
		if in.moved == 0 {
			in.beforeMoved = in.event
			// The ids below this database's resume after the file's own,
			// but for an earlier move's, which keep their floor.
			floor := store.EventID{}
			if in.carried {
				floor = store.EventID{Tx: r.ID.Tx}
			}
			if moved.Get(movedKey(floor)) == nil {
				if err := moved.Put(movedKey(floor), binary.BigEndian.AppendUint64(nil, in.beforeMoved)); err != nil {
					return err
				}
			}
		}
		in.moved++
		// Past PostgreSQL's own seq too: a file's cursor from before the
		// move to PostgreSQL must not pass a moved event.
		seq = max(in.event+1, r.ID.Seq)
		was = r.ID
	} else if in.moved > 0 || seq <= in.event {
		return store.Errorf(store.EUNPROCESSABLE, "event %s comes after event number %d in the stream: events must come in order; nothing was copied", r.ID, in.event)
	} else if !was.IsZero() && !in.carried {
		in.carried = true
		if err := moved.Put(movedKey(store.EventID{}), binary.BigEndian.AppendUint64(nil, seq-1)); err != nil {
			return err
		}
	}
	if !was.IsZero() {
		if err := moved.Put(movedKey(was), binary.BigEndian.AppendUint64(nil, seq)); err != nil {
			return err
		}
		k := idKey(int64(seq))
		if err := tx.Bucket(bktEventsWas).Put(k[:], movedKey(was)); err != nil {
			return err
		}
	}
	in.event = max(in.event, seq)
	data := r.Data
	if r.ID.Tx != 0 && r.Type == store.EventStoreRestored {
		var err error
		if data, err = restoredToInFile(tx, data); err != nil {
			return fmt.Errorf("event %s: %w", r.ID, err)
		}
	}
	k, v := encodeEvent(seq, r.CreatedAt, r.Target, r.Type, data)
	b := tx.Bucket(bktEvents)
	b.FillPercent = appendFill
	return b.Put(k, v)
}

func (in *importer) putDelivery(tx *bolt.Tx, r *store.Delivery) error {
	d := deliveryRecord{Delivery: *r}
	if r.EventID.Tx != 0 {
		v := tx.Bucket(bktEventsMoved).Get(movedKey(r.EventID))
		if len(v) != 8 && r.State == store.DeliveryPending {
			return store.Errorf(store.EUNPROCESSABLE, "pending delivery %d is of event %s, which the database no longer holds; nothing was copied: let it be attempted, or delete its webhook, and move again", r.ID, r.EventID)
		}
		// A past delivery whose event was pruned keeps no event.
		d.EventID = store.EventID{}
		if len(v) == 8 {
			d.EventID.Seq = binary.BigEndian.Uint64(v)
		}
	}
	if err := tx.Bucket(bktDeliveriesWebhook).Put(appendID(itob(r.WebhookID), r.ID), empty); err != nil {
		return err
	}
	return putDelivery(tx, &d)
}

// movedFloor is the number in the file of the last event at or before
// PostgreSQL's id: events after id there are those after it here.
func movedFloor(tx *bolt.Tx, id store.EventID) uint64 {
	c := tx.Bucket(bktEventsMoved).Cursor()
	key := movedKey(id)
	k, v := c.Seek(key)
	switch {
	case k == nil:
		_, v = c.Last()
	case !bytes.Equal(k, key):
		_, v = c.Prev()
	}
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// EventCursor is the cursor in this file of an event id a client gives: a
// file's own as it is, one of the database the file was moved back from
// as movedFloor says. In a file no import wrote, such an id stays as it is.
func (db *DB) EventCursor(ctx context.Context, id store.EventID) (store.EventID, error) {
	if id.Tx == 0 {
		return id, nil
	}
	return readValue(ctx, db, func(tx *bolt.Tx) (store.EventID, error) {
		if k, _ := tx.Bucket(bktEventsMoved).Cursor().First(); k == nil {
			return id, nil
		}
		return store.EventID{Seq: movedFloor(tx, id)}, nil
	})
}

// restoredToInFile is the data of a store.restored that PostgreSQL
// recorded, with restoredTo as the file numbers it.
func restoredToInFile(tx *bolt.Tx, data json.RawMessage) (json.RawMessage, error) {
	var r store.Restored
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	id, err := store.ParseEventID(r.RestoredTo)
	if r.RestoredTo == "" || err != nil || id.Tx == 0 {
		return data, nil // none, or a file's own
	}
	if seq := movedFloor(tx, id); seq > 0 {
		r.RestoredTo = store.EventID{Seq: seq}.String()
	} else {
		r.RestoredTo, r.RestoredToTime = "", nil // none of the file's events came before it
	}
	return json.Marshal(r)
}

// wasBucket is bktEventsWas, nil when it is empty: a claim then looks
// nothing up.
func wasBucket(tx *bolt.Tx) *bolt.Bucket {
	b := tx.Bucket(bktEventsWas)
	if k, _ := b.Cursor().First(); k == nil {
		return nil
	}
	return b
}

// wasID is the id a moved event had on PostgreSQL, zero for any other.
func wasID(b *bolt.Bucket, seq uint64) store.EventID {
	if b == nil {
		return store.EventID{}
	}
	k := idKey(int64(seq))
	if v := b.Get(k[:]); len(v) == 16 {
		return store.EventID{Tx: binary.BigEndian.Uint64(v), Seq: binary.BigEndian.Uint64(v[8:])}
	}
	return store.EventID{}
}
