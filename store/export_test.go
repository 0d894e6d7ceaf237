package store

import (
	"context"

	bolt "go.etcd.io/bbolt"
)

// Unbatched makes every write a transaction of its own (one fsync each), the
// baseline that shows what batching buys.
func (db *DB) Unbatched() { db.commit = db.bolt.Update }

// BulkCreatePets creates n pets in category catID in a single transaction,
// through the same code as CreatePet, to build large fixtures fast.
func (db *DB) BulkCreatePets(ctx context.Context, n int, catID int64) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		for i := 0; i < n; i++ {
			p := Pet{Name: "bulk", CategoryID: catID, Status: StatusAvailable}
			if err := createPet(tx, &p); err != nil {
				return err
			}
		}
		return nil
	})
}
