package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// Export gives everything the file holds, as of one read transaction, for
// the move to another store.
func (db *DB) Export(ctx context.Context) (*store.Snapshot, error) {
	s := &store.Snapshot{}
	err := db.read(ctx, func(tx *bolt.Tx) error {
		for _, export := range []func() error{
			func() error {
				return exportRecords(ctx, tx, bktCategories, decodeJSONRecord[store.Category], &s.Categories)
			},
			func() error { return exportRecords(ctx, tx, bktPets, decodePet, &s.Pets) },
			func() error { return exportRecords(ctx, tx, bktInventory, decodeInventory, &s.Inventory) },
			func() error { return exportRecords(ctx, tx, bktOrders, decodeJSONRecord[store.Order], &s.Orders) },
			func() error { return exportRecords(ctx, tx, bktAPIKeys, decodeStoredAPIKey, &s.APIKeys) },
		} {
			if err := export(); err != nil {
				return err
			}
		}
		var err error
		if h := tx.Bucket(bktMeta).Get(metaAdminHash); h != nil {
			s.AdminTokenSHA256 = bytes.Clone(h)
		}
		if s.Project, err = getProject(tx); err != nil {
			return err
		}
		if s.Settings, err = getSettings(tx); err != nil {
			return err
		}
		err = tx.Bucket(bktDomains).ForEach(func(k, v []byte) error {
			var d store.Domain
			if err := json.Unmarshal(v, &d); err != nil {
				return corrupt(fmt.Errorf("domain %s: %w", k, err))
			}
			s.Domains = append(s.Domains, d)
			return nil
		})
		if err != nil {
			return err
		}
		store.SortDomains(s.Domains)
		err = tx.Bucket(bktCerts).ForEach(func(k, v []byte) error {
			if len(v) < 8 {
				return fmt.Errorf("key %q: a record of %d bytes has no modification time", k, len(v))
			}
			s.KV = append(s.KV, store.KVEntry{
				Key:      string(k),
				Value:    bytes.Clone(v[8:]),
				Modified: time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC(),
			})
			return nil
		})
		if err != nil {
			return err
		}
		s.LastIDs = store.LastIDs{
			Categories: int64(tx.Bucket(bktCategories).Sequence()),
			Pets:       int64(tx.Bucket(bktPets).Sequence()),
			Orders:     int64(tx.Bucket(bktOrders).Sequence()),
			APIKeys:    int64(tx.Bucket(bktAPIKeys).Sequence()),
			Deploys:    int64(tx.Bucket(bktMeta).Sequence()),
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// exportRecords appends the records of an entity bucket, decoded, to out,
// in id order.
func exportRecords[T any](ctx context.Context, tx *bolt.Tx, bucket []byte, decode func(id int64, v []byte) (T, error), out *[]T) error {
	return forEachRecord(ctx, tx, bucket, func(id int64, v []byte) error {
		rec, err := decode(id, v)
		*out = append(*out, rec)
		return err
	})
}

// decodeJSONRecord decodes a record stored as plain JSON.
func decodeJSONRecord[T any](id int64, v []byte) (T, error) {
	var rec T
	err := decodeJSON(id, v, &rec)
	return rec, err
}

// decodeStoredAPIKey decodes an API key record as a snapshot holds it.
func decodeStoredAPIKey(id int64, v []byte) (store.StoredAPIKey, error) {
	var rec apiKeyRecord
	err := decodeJSON(id, v, &rec)
	return store.StoredAPIKey{APIKey: rec.APIKey, SHA256: rec.Hash}, err
}

// forEachRecord visits the records of an entity bucket in id order.
func forEachRecord(ctx context.Context, tx *bolt.Tx, bucket []byte, visit func(id int64, v []byte) error) error {
	return tx.Bucket(bucket).ForEach(func(k, v []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(k) != 8 {
			return fmt.Errorf("bucket %s: key %x is not an id", bucket, k)
		}
		return visit(btoi(k), v)
	})
}

var _ store.Exporter = (*DB)(nil)
