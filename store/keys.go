package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
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

func btoi(b []byte) int64 {
	return int64(binary.BigEndian.Uint64(b))
}

// cat joins key parts into a new slice.
func cat(parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	k := make([]byte, 0, n+8)
	for _, p := range parts {
		k = append(k, p...)
	}
	return k
}

func statusPrefix(s PetStatus) []byte {
	return append([]byte(s), 0)
}

func completeByte(c bool) []byte {
	if c {
		return []byte{1}
	}
	return []byte{0}
}

// getJSON decodes the value at id into v and reports whether it exists.
func getJSON(b *bolt.Bucket, id int64, v any) (bool, error) {
	data := b.Get(itob(id))
	if data == nil {
		return false, nil
	}
	return true, decodeJSON(id, data, v)
}

// putJSON stores v at id.
func putJSON(b *bolt.Bucket, id int64, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(itob(id), data)
}

// nextID draws a new id from the bucket's sequence. The sequence is part of
// the transaction, so a rolled-back write gives its id back.
func nextID(b *bolt.Bucket) (int64, error) {
	seq, err := b.NextSequence()
	return int64(seq), err
}

// exists reports whether id is a key of b.
func exists(b *bolt.Bucket, id int64) bool {
	return id > 0 && b.Get(itob(id)) != nil
}

// decodeJSON decodes a stored value, naming the record when it is corrupt.
func decodeJSON(id int64, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode record %d: %w", id, err)
	}
	return nil
}

// corrupt turns a "not found" met where the store's own invariants promise a
// record (an index entry, a pet's inventory entry) into a storage error: the
// client did nothing wrong, and inside a write it must abort the transaction
// rather than commit what was written before it.
func corrupt(err error) error {
	if e, ok := err.(*Error); ok {
		return fmt.Errorf("store inconsistent: %s", e.Message)
	}
	return err
}
