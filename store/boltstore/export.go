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
		err := forEachRecord(ctx, tx, bktCategories, func(id int64, v []byte) error {
			var c store.Category
			err := decodeJSON(id, v, &c)
			s.Categories = append(s.Categories, c)
			return err
		})
		if err != nil {
			return err
		}
		err = forEachRecord(ctx, tx, bktPets, func(id int64, v []byte) error {
			p, err := decodePet(id, v)
			s.Pets = append(s.Pets, p)
			return err
		})
		if err != nil {
			return err
		}
		err = forEachRecord(ctx, tx, bktInventory, func(id int64, v []byte) error {
			it, err := decodeInventory(id, v)
			s.Inventory = append(s.Inventory, it)
			return err
		})
		if err != nil {
			return err
		}
		err = forEachRecord(ctx, tx, bktOrders, func(id int64, v []byte) error {
			var o store.Order
			err := decodeJSON(id, v, &o)
			s.Orders = append(s.Orders, o)
			return err
		})
		if err != nil {
			return err
		}
		err = forEachRecord(ctx, tx, bktAPIKeys, func(id int64, v []byte) error {
			var rec apiKeyRecord
			err := decodeJSON(id, v, &rec)
			s.APIKeys = append(s.APIKeys, store.StoredAPIKey{APIKey: rec.APIKey, SHA256: rec.Hash})
			return err
		})
		if err != nil {
			return err
		}
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
