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
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(v))
	return b
}

// idKey is itob as an array: a key only looked up (bbolt's Get and Seek
// keep no reference to it) then stays on the stack.
func idKey(v int64) [8]byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], uint64(v))
	return k
}

func appendID(b []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(v))
}

// indexEntry is one index key and its bucket.
type indexEntry struct{ bucket, key []byte }

// putIndexEntries adds a record's entries to its index buckets.
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

// deleteIndexEntries removes a record's entries from its index buckets.
func deleteIndexEntries(tx *bolt.Tx, entries [3]indexEntry) error {
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

// appendFill is the FillPercent of the buckets that putRecord and
// putIndexEntries write. Their keys only grow within a key range (entity
// ids come from a sequence, and every index key ends with one), so inserts
// land at the end of a range. bbolt splits a node that outgrows its page into pieces
// of FillPercent of a page: at its default, half a page, every split leaves
// a half-empty node behind that is never filled, and the node taking the
// inserts, which each commit reads and rewrites in full, starts half full.
// At 0.9 the tree has fewer, fuller pages and a commit dirties fewer of
// them, while a record that grows in place (a longer name, a larger stock)
// still finds room in its page. Not 1.0: a full page would then split on
// every such update, shedding one near-empty page each time.
const appendFill = 0.9

// putRecord stores at id the record that appendValue writes, its key and
// value in one allocation. bbolt keeps the value until the transaction
// ends, so the buffer is never reused. size is what the value usually takes.
func putRecord(b *bolt.Bucket, id int64, size int, appendValue func([]byte) ([]byte, error)) error {
	buf, err := appendValue(appendID(make([]byte, 0, 8+size), id))
	if err != nil {
		return err
	}
	// FillPercent is not stored in the file: it is set on the bucket
	// handle, which bbolt keeps for the rest of the transaction.
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

// nextID draws a new id from the bucket's sequence. The sequence is part of
// the transaction, so a rolled-back write gives its id back.
func nextID(b *bolt.Bucket) (int64, error) {
	seq, err := b.NextSequence()
	return int64(seq), err
}

func exists(b *bolt.Bucket, id int64) bool {
	k := idKey(id)
	return id > 0 && b.Get(k[:]) != nil
}

// decodeJSONRecord decodes a record stored as JSON, naming it when it is
// corrupt. It is also the slow path of the hand-written decoders
// (records.go), apart so that its value's escape to json.Unmarshal does not
// put theirs on the heap too.
func decodeJSONRecord[T any](id int64, data []byte) (T, error) {
	var rec T
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("decode record %d: %w", id, err)
	}
	return rec, nil
}

// corrupt turns a "not found" met where the store's own invariants promise a
// record (an index entry, a pet's inventory entry) into a storage error: the
// client did nothing wrong, and inside a write it must abort the transaction
// rather than commit what was written before it.
func corrupt(err error) error {
	if e, ok := err.(*store.Error); ok {
		return fmt.Errorf("store inconsistent: %s", e.Message)
	}
	return err
}
