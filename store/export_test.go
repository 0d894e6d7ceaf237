package store

import (
	"context"
	"encoding/json"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Unbatched makes every write a transaction of its own (one fsync each), the
// baseline that shows what batching buys.
func (db *DB) Unbatched() { db.commit = db.bolt.Update }

// BulkCreatePets creates n pets in category catID in a single transaction,
// through the same code as CreatePet, to build large fixtures fast. Their
// statuses cycle through available, pending, sold.
func (db *DB) BulkCreatePets(ctx context.Context, n int, catID int64) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		for i := 0; i < n; i++ {
			statuses := [...]PetStatus{StatusAvailable, StatusPending, StatusSold}
			p := Pet{Name: "bulk", CategoryID: catID, Status: statuses[i%3]}
			if err := createPet(tx, &p); err != nil {
				return err
			}
		}
		return nil
	})
}

// CertLockRecords returns the names of the certmagic lock records in the
// file, with their expiry.
func (db *DB) CertLockRecords() map[string]time.Time {
	recs := map[string]time.Time{}
	db.bolt.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bktCertLocks).ForEach(func(k, v []byte) error {
			var r lockRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			recs[string(k)] = r.Expires
			return nil
		})
	})
	return recs
}
