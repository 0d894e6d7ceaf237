package boltstore

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// Export gives everything the file holds, as of one read transaction, for
// the move to another store.
func (db *DB) Export(ctx context.Context) (*store.Snapshot, error) {
	s := &store.Snapshot{}
	err := db.read(ctx, func(tx *bolt.Tx) error {
		for _, export := range []func() error{
			func() error { return exportRecords(ctx, tx, categoryTable, &s.Categories) },
			func() error { return exportRecords(ctx, tx, petTable, &s.Pets) },
			func() error { return exportRecords(ctx, tx, inventoryTable, &s.Inventory) },
			func() error { return exportRecords(ctx, tx, orderTable, &s.Orders) },
			func() error { return exportRecords(ctx, tx, apiKeyTable, &s.APIKeys) },
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
		if s.Domains, err = allDomains(tx); err != nil {
			return err
		}
		err = tx.Bucket(bktCerts).ForEach(func(k, v []byte) error {
			e, ok := decodeKV(k, v)
			if !ok {
				return fmt.Errorf("key %q: a record of %d bytes has no modification time", k, len(v))
			}
			e.Value = bytes.Clone(e.Value)
			s.KV = append(s.KV, e)
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

// exportRecords appends the records of an entity table, decoded, to out,
// in id order.
func exportRecords[T any](ctx context.Context, tx *bolt.Tx, t table[T], out *[]T) error {
	return tx.Bucket(t.bucket).ForEach(func(k, v []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(k) != 8 {
			return fmt.Errorf("bucket %s: key %x is not an id", t.bucket, k)
		}
		rec, err := t.decode(btoi(k), v)
		*out = append(*out, rec)
		return err
	})
}

var _ store.Exporter = (*DB)(nil)
