package boltstore

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// Stream gives everything the file holds, as of one read transaction, one
// record at a time, for the move to another store. Records are decoded
// one by one and the values of the key/value space are lent from the
// file's pages, so the memory it takes does not grow with the file.
func (db *DB) Stream(ctx context.Context, to store.Sink) error {
	return db.read(ctx, func(tx *bolt.Tx) error {
		totals := store.Totals{
			Categories: countKeys(tx, bktCategories), Pets: countKeys(tx, bktPets), Inventory: countKeys(tx, bktInventory),
			Orders: countKeys(tx, bktOrders), APIKeys: countKeys(tx, bktAPIKeys), Domains: countKeys(tx, bktDomains), KV: countKeys(tx, bktCerts),
		}
		if err := to.Totals(totals); err != nil {
			return err
		}
		for _, stream := range []func() error{
			func() error { return streamRecords(ctx, tx, categoryTable, to) },
			func() error { return streamRecords(ctx, tx, petTable, to) },
			func() error { return streamRecords(ctx, tx, inventoryTable, to) },
			func() error { return streamRecords(ctx, tx, orderTable, to) },
			func() error { return streamRecords(ctx, tx, apiKeyTable, to) },
		} {
			if err := stream(); err != nil {
				return err
			}
		}
		domains, err := allDomains(tx) // a handful: a project's own
		if err != nil {
			return err
		}
		for i := range domains {
			if err := to.Record(&domains[i]); err != nil {
				return err
			}
		}
		err = tx.Bucket(bktCerts).ForEach(func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			e, ok := decodeKV(k, v)
			if !ok {
				return fmt.Errorf("key %q: a record of %d bytes has no modification time", k, len(v))
			}
			return to.Record(&e)
		})
		if err != nil {
			return err
		}
		rest := store.Rest{
			AdminTokenSHA256: tx.Bucket(bktMeta).Get(metaAdminHash),
			LastIDs: store.LastIDs{
				Categories: int64(tx.Bucket(bktCategories).Sequence()),
				Pets:       int64(tx.Bucket(bktPets).Sequence()),
				Orders:     int64(tx.Bucket(bktOrders).Sequence()),
				APIKeys:    int64(tx.Bucket(bktAPIKeys).Sequence()),
				Deploys:    int64(tx.Bucket(bktMeta).Sequence()),
			},
		}
		if rest.Project, err = getProject(tx); err != nil {
			return err
		}
		if rest.Settings, err = getSettings(tx); err != nil {
			return err
		}
		return to.Rest(rest)
	})
}

// countKeys counts the keys of a bucket without reading their values.
func countKeys(tx *bolt.Tx, bucket []byte) int64 {
	var n int64
	c := tx.Bucket(bucket).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n
}

// streamRecords gives the records of an entity table, decoded, in id
// order.
func streamRecords[T any](ctx context.Context, tx *bolt.Tx, t table[T], to store.Sink) error {
	return tx.Bucket(t.bucket).ForEach(func(k, v []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(k) != 8 {
			return fmt.Errorf("bucket %s: key %x is not an id", t.bucket, k)
		}
		rec, err := t.decode(btoi(k), v)
		if err != nil {
			return err
		}
		t.setVersion(tx, &rec)
		return to.Record(&rec)
	})
}

var _ store.Streamer = (*DB)(nil)
