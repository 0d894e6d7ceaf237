package boltstore

import (
	"context"
	"encoding/binary"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// table is an entity bucket: records of type T by id.
type table[T any] struct {
	bucket []byte
	decode func(id int64, v []byte) (T, error)
	what   string // in "pet 3 not found"

	// versions is the kind of the records' versions (versions.go), 0 for
	// none; fields gives a record's id and version (nil for none).
	versions byte
	fields   func(rec *T) (id, version *int64)
	// put stores a record at its id, index lists its index entries (nil
	// for none), for the tables that putWhole writes.
	put   func(b *bolt.Bucket, rec *T) error
	index func(rec *T) [3]indexEntry
}

var (
	petTable = table[store.Pet]{bucket: bktPets, decode: decodePet, what: "pet",
		versions: versionPet, fields: func(p *store.Pet) (*int64, *int64) { return &p.ID, &p.Version },
		put: putPet, index: petIndexEntries}
	categoryTable = table[store.Category]{bucket: bktCategories, decode: decodeJSONRecord[store.Category], what: "category",
		versions: versionCategory, fields: func(c *store.Category) (*int64, *int64) { return &c.ID, &c.Version },
		put: func(b *bolt.Bucket, c *store.Category) error { return putJSON(b, c.ID, c) }}
	orderTable = table[store.Order]{bucket: bktOrders, decode: decodeJSONRecord[store.Order], what: "order",
		versions: versionOrder, fields: func(o *store.Order) (*int64, *int64) { return &o.ID, &o.Version },
		put: putOrder, index: orderIndexEntries}
	// An inventory entry is keyed by its pet's id, and missing with its pet.
	inventoryTable = table[store.InventoryItem]{bucket: bktInventory, decode: decodeInventory, what: "pet"}
	apiKeyTable    = table[store.StoredAPIKey]{bucket: bktAPIKeys, decode: decodeJSONRecord[store.StoredAPIKey], what: "api key",
		fields: func(k *store.StoredAPIKey) (*int64, *int64) { return &k.ID, nil },
		put:    func(b *bolt.Bucket, k *store.StoredAPIKey) error { return putJSON(b, k.ID, k) }}
)

// insert stores rec as a new record of t under an id drawn from t's
// sequence, and sets its id (and version 1). Drawing an id is a write:
// insert comes after every check of a write.
func (t table[T]) insert(tx *bolt.Tx, rec *T) error {
	id, err := nextID(tx.Bucket(t.bucket))
	if err != nil {
		return err
	}
	recID, version := t.fields(rec)
	*recID = id
	if version != nil {
		*version = 1
	}
	return t.putWhole(tx, rec)
}

// putWhole stores rec at its id with its index entries and version.
func (t table[T]) putWhole(tx *bolt.Tx, rec *T) error {
	if err := t.put(tx.Bucket(t.bucket), rec); err != nil {
		return err
	}
	if t.index != nil {
		if err := putIndexEntries(tx, t.index(rec)); err != nil {
			return err
		}
	}
	if id, version := t.fields(rec); version != nil && *version > 1 {
		b := tx.Bucket(bktVersions)
		*version = max(*version, int64(b.Sequence())+1) // past what a put-back backup took back
		return b.Put(versionKey(t.versions, *id), binary.BigEndian.AppendUint64(nil, uint64(*version)))
	}
	return nil
}

// getAt is get for a write with cond: the record, once the condition holds
// for it, and its version.
func (t table[T]) getAt(tx *bolt.Tx, cond store.Condition, id int64) (T, int64, error) {
	rec, err := t.get(tx, id)
	if err != nil {
		return rec, 0, err
	}
	v := getVersion(tx, t.versions, id)
	return rec, v, cond.Check(t.what+" "+strconv.FormatInt(id, 10), v)
}

// replace stores rec, at its new version, in place of old.
func (t table[T]) replace(tx *bolt.Tx, old, rec *T) error {
	if t.index != nil {
		entries := t.index(old)
		if err := deleteKeys(tx, entries[:]...); err != nil {
			return err
		}
	}
	return t.putWhole(tx, rec)
}

// remove deletes rec, at id, with its index entries and version.
func (t table[T]) remove(tx *bolt.Tx, id int64, rec *T) error {
	if t.index != nil {
		entries := t.index(rec)
		if err := deleteKeys(tx, entries[:]...); err != nil {
			return err
		}
	}
	return deleteKeys(tx, indexEntry{bktVersions, versionKey(t.versions, id)}, indexEntry{t.bucket, itob(id)})
}

func (t table[T]) get(tx *bolt.Tx, id int64) (T, error) {
	k := idKey(id)
	v := tx.Bucket(t.bucket).Get(k[:])
	if v == nil {
		var zero T
		return zero, store.NotFound(t.what, id)
	}
	return t.decode(id, v)
}

// read returns the record with its version, in a transaction of its own.
func (t table[T]) read(ctx context.Context, db *DB, id int64) (T, error) {
	return readValue(ctx, db, func(tx *bolt.Tx) (T, error) {
		rec, err := t.get(tx, id)
		if err == nil {
			t.setVersion(tx, &rec)
		}
		return rec, err
	})
}

func (t table[T]) setVersion(tx *bolt.Tx, rec *T) {
	if t.versions == 0 {
		return
	}
	id, version := t.fields(rec)
	*version = getVersion(tx, t.versions, *id)
}

// page lists one page of the records in id order. With an index bucket,
// the records are those whose ids follow prefix in it.
func (t table[T]) page(ctx context.Context, db *DB, index, prefix []byte, p store.Page) ([]T, int64, error) {
	out := make([]T, 0, p.Size())
	var next int64
	err := db.read(ctx, func(tx *bolt.Tx) error {
		var err error
		if index == nil {
			next, err = walkPage(tx.Bucket(t.bucket), nil, p, func(id int64, v []byte) error {
				rec, err := t.decode(id, v)
				out = append(out, rec)
				return err
			})
			return err
		}
		next, err = walkPage(tx.Bucket(index), prefix, p, func(id int64, _ []byte) error {
			rec, err := t.get(tx, id)
			out = append(out, rec)
			return corrupt(err)
		})
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return out, next, nil
}

func readValue[T any](ctx context.Context, db *DB, fn func(tx *bolt.Tx) (T, error)) (T, error) {
	var v T
	err := db.read(ctx, keepValue(&v, fn))
	return v, err
}

// writeValue runs fn in a write and returns the value of its run that
// committed.
func writeValue[T any](ctx context.Context, db *DB, fn func(tx *bolt.Tx) (T, error)) (T, error) {
	return keyedValue(ctx, db, nil, fn, nil)
}

// keyedValue is writeValue for a keyed write, whose key keeps the value
// and what beside (nil for nothing) gives of it.
func keyedValue[T any](ctx context.Context, db *DB, key *store.IdempotentWrite, fn func(tx *bolt.Tx) (T, error), beside func(*T) any) (T, error) {
	var v T
	err := db.keyedWrite(ctx, key, keepValue(&v, fn), func() (any, any) {
		if beside == nil {
			return &v, nil
		}
		return &v, beside(&v)
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// create runs a keyed write that inserts a new record made from in, as
// normalize makes it, and sets *out to the record of the run that
// committed.
func create[T any](ctx context.Context, db *DB, out *T, in T, key *store.IdempotentWrite, insert func(tx *bolt.Tx, rec *T) error, normalize ...func(T) (T, error)) error {
	for _, n := range normalize {
		var err error
		if in, err = n(in); err != nil {
			return err
		}
	}
	var rec T
	err := db.keyedWrite(ctx, key, func(tx *bolt.Tx) error {
		rec = in
		return insert(tx, &rec)
	}, func() (any, any) { return &rec, nil })
	if err == nil {
		*out = rec
	}
	return err
}

func keepValue[T any](v *T, fn func(tx *bolt.Tx) (T, error)) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		var err error
		*v, err = fn(tx)
		return err
	}
}
