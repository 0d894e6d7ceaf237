package boltstore

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// Key layout. Ids are 8-byte big-endian so that byte order is id order, which
// is what lets a list page start with a Seek instead of a scan.
//
//	pets, categories, orders, inventory, apikeys   id8 -> JSON
//	idx_pets_status            status 0x00 pet8
//	idx_pets_category          cat8 pet8
//	idx_pets_category_status   cat8 status 0x00 pet8
//	idx_orders_pet             pet8 order8
//	idx_orders_complete        complete1 order8
//	idx_orders_pet_complete    pet8 complete1 order8
//	idx_apikeys_hash           sha256 -> id8
//
// Statuses are validated before they reach a key, so none contains 0x00 and
// one status's prefix never matches another's.

// empty is the value of index entries: the key says everything.
var empty = []byte{}

func itob(v int64) []byte {
	return appendID(make([]byte, 0, 8), v)
}

// idKey is itob as an array, which a key only looked up keeps on the stack.
func idKey(v int64) [8]byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], uint64(v))
	return k
}

func appendID(b []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(v))
}

// indexEntry is a key of a bucket: an index entry, or any key to delete.
type indexEntry struct{ bucket, key []byte }

func putIndexEntries(tx *bolt.Tx, entries [3]indexEntry) error {
	for _, e := range entries {
		b := tx.Bucket(e.bucket)
		b.FillPercent = appendFill
		if err := b.Put(e.key, empty); err != nil {
			return err
		}
	}
	return nil
}

func deleteKeys(tx *bolt.Tx, entries ...indexEntry) error {
	for _, e := range entries {
		if err := tx.Bucket(e.bucket).Delete(e.key); err != nil {
			return err
		}
	}
	return nil
}

func btoi(b []byte) int64 {
	return int64(binary.BigEndian.Uint64(b))
}

func statusPrefix(s store.PetStatus) []byte {
	return append([]byte(s), 0)
}

func completeByte(c bool) []byte {
	if c {
		return []byte{1}
	}
	return []byte{0}
}

func putJSON(b *bolt.Bucket, id int64, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(itob(id), data)
}

// appendFill is the FillPercent of the buckets whose keys only grow within
// a key range (ids from a sequence), so that inserts land at its end: at
// bbolt's default, every split leaves a half-empty page behind that is
// never filled. Not 1.0, so that a record that grows in place still finds
// room in its page.
const appendFill = 0.9

// putRecord stores at id the record that appendValue writes, its key and
// value in one allocation (bbolt keeps it until the transaction ends).
// size is what the value usually takes.
func putRecord(b *bolt.Bucket, id int64, size int, appendValue func([]byte) ([]byte, error)) error {
	buf, err := appendValue(appendID(make([]byte, 0, 8+size), id))
	if err != nil {
		return err
	}
	// On the bucket handle, which bbolt keeps for the transaction.
	b.FillPercent = appendFill
	return b.Put(buf[:8], buf[8:])
}

func putPet(b *bolt.Bucket, p *store.Pet) error {
	return putRecord(b, p.ID, 96+len(p.Name)+len(p.Status), func(buf []byte) ([]byte, error) {
		return p.AppendJSON(buf), nil
	})
}

func putInventory(b *bolt.Bucket, it *store.InventoryItem) error {
	return putRecord(b, it.PetID, 80+len(it.Status), func(buf []byte) ([]byte, error) {
		return it.AppendJSON(buf), nil
	})
}

func putOrder(b *bolt.Bucket, o *store.Order) error {
	return putRecord(b, o.ID, 160, func(buf []byte) ([]byte, error) {
		return o.AppendJSON(buf)
	})
}

// nextID draws a new id from the bucket's sequence; a rolled-back write
// gives its id back.
func nextID(b *bolt.Bucket) (int64, error) {
	seq, err := b.NextSequence()
	return int64(seq), err
}

func exists(b *bolt.Bucket, id int64) bool {
	k := idKey(id)
	return id > 0 && b.Get(k[:]) != nil
}

// decodeJSONRecord decodes a record stored as JSON. It is the slow path of
// the hand-written decoders (records.go), apart so that its value's escape
// to json.Unmarshal does not put theirs on the heap too.
func decodeJSONRecord[T any](id int64, data []byte) (T, error) {
	var rec T
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("decode record %d: %w", id, err)
	}
	return rec, nil
}

// corrupt turns a "not found" met where the store's invariants promise a
// record (an index entry) into a storage error, which aborts a write's
// transaction: the client did nothing wrong.
func corrupt(err error) error {
	if e, ok := err.(*store.Error); ok {
		return fmt.Errorf("store inconsistent: %s", e.Message)
	}
	return err
}
