package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"time"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// Unbatched makes every write a transaction of its own (one fsync each), the
// baseline that shows what batching buys.
func (db *DB) Unbatched() {
	db.commit = func(r *writeReq) error { return outcome(db.bolt.Update(r.run)) }
}

// BoltBatched makes every write go through bbolt's own DB.Batch, the
// library's way of sharing fsyncs (a group closes on a timer or at its
// size), in place of the committer: the baseline the committer is kept
// against.
func (db *DB) BoltBatched() {
	db.commit = func(r *writeReq) error { return outcome(db.bolt.Batch(r.run)) }
}

// CommitStats returns how many group commits the committer has made and how
// many writes they carried.
func (db *DB) CommitStats() (commits, writes int64) {
	return db.commits.Load(), db.grouped.Load()
}

// PagesWritten returns how many page writes (pwrite calls) the file's
// transactions have made, the meta page's included.
func (db *DB) PagesWritten() int64 {
	s := db.bolt.Stats()
	return s.TxStats.GetWrite()
}

// BulkCreatePets creates n pets in category catID through the same code as
// CreatePet, to build large fixtures fast. Their statuses cycle through
// available, pending, sold.
//
// It commits every 5,000 pets, because a bbolt transaction splits its nodes
// only at commit: in one 100,000-pet transaction every index insert that is
// not an append shifts an ever longer in-memory node, which took 40 s.
func (db *DB) BulkCreatePets(ctx context.Context, n int, catID int64) error {
	statuses := [...]store.PetStatus{store.StatusAvailable, store.StatusPending, store.StatusSold}
	for done := 0; done < n; {
		chunk := min(n-done, 5000)
		err := db.bolt.Update(func(tx *bolt.Tx) error {
			for i := range chunk {
				p := store.Pet{Name: "bulk", CategoryID: catID, Status: statuses[(done+i)%3]}
				if err := createPet(tx, &p); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		done += chunk
	}
	return nil
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

// RootAndFreelist returns the pages of the root bucket and of the freelist
// that a data file's first meta page names.
func RootAndFreelist(file []byte) (root, freelist int) {
	m := file[pageHeaderSize:]
	return int(binary.NativeEndian.Uint64(m[16:])), int(binary.NativeEndian.Uint64(m[32:]))
}

// PageSizeOf returns the page size in a data file's first meta page.
func PageSizeOf(file []byte) int {
	m, err := readMeta(bytes.NewReader(file), 0)
	if err != nil {
		return 0
	}
	return int(m.pageSize)
}

// Degraded returns the storage failure of the last write, or nil when the
// last write committed (after a full disk: once the disk has room again).
func (db *DB) Degraded() error {
	if f := db.fault.Load(); f != nil {
		return *f
	}
	return nil
}

// ObserveMarks brings the restore marks up to date with the file's
// counters now, as the store does every second.
func (db *DB) ObserveMarks() { db.observeMarks() }
