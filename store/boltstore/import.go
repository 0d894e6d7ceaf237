package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// importBatch is how many records one transaction of Import writes: a
// transaction holds every page it changes in memory until it commits.
const importBatch = 10_000

// Import copies what another store streams into this empty file, keeping
// every id, version and sequence. It commits in batches; when it fails, or
// the source starts its stream again, it empties the file again (a file
// being imported into is not one to serve from). Events that PostgreSQL
// numbered are numbered again after the file's own (moved.go). It refuses
// keys that bbolt cannot keep, naming the first.
func (db *DB) Import(ctx context.Context, from store.Streamer) error {
	var seqs map[string]uint64
	err := db.bolt.View(func(tx *bolt.Tx) error {
		seqs = map[string]uint64{}
		for _, b := range importedBuckets() {
			seqs[string(b)] = tx.Bucket(b).Sequence()
		}
		for _, b := range streamedBuckets {
			if k, _ := tx.Bucket(b).Cursor().First(); k != nil {
				return store.Errorf(store.ECONFLICT, "the target file is not empty (bucket %s holds records): the move copies into an empty file only", b)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("copying into %s: %w", db.path, err)
	}
	in := &importer{ctx: ctx, db: db, seqs: seqs}
	err = from.Stream(ctx, in)
	if err == nil {
		err = in.finish()
	}
	if err == nil {
		err = in.commit()
	}
	if err == nil {
		// Into the file's marks, which its Close saves (restore.go).
		for _, rev := range in.rest.Revocations {
			if len(rev.SHA256) == 32 {
				db.marks.Revoke(rev)
			}
		}
	}
	if err != nil {
		in.rollback()
		if cleanErr := db.emptyAgain(seqs); cleanErr != nil {
			err = fmt.Errorf("%w; emptying the file again failed too: %v", err, cleanErr)
		}
		return fmt.Errorf("copying into %s: %w", db.path, err)
	}
	return db.loadCredentials()
}

// importedBuckets are all but the certificate locks, which belong to the
// running processes.
func importedBuckets() [][]byte {
	var out [][]byte
	for _, b := range allBuckets {
		if !bytes.Equal(b, bktCertLocks) {
			out = append(out, b)
		}
	}
	return out
}

func (db *DB) emptyAgain(seqs map[string]uint64) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		for _, name := range importedBuckets() {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
			b, err := tx.CreateBucket(name)
			if err != nil {
				return err
			}
			if err := b.SetSequence(seqs[string(name)]); err != nil {
				return err
			}
		}
		return nil
	})
}

type importer struct {
	ctx     context.Context
	db      *DB
	seqs    map[string]uint64
	tx      *bolt.Tx
	n       int
	started bool
	last    store.LastIDs
	rest    store.Rest
	// event is the last event number given; beforeMoved the last one
	// before the first event PostgreSQL numbered, and moved how many of
	// those were numbered again; carried is set once an event of an
	// earlier move back came, its ids mapped already.
	event, beforeMoved uint64
	moved              int64
	carried            bool
}

// Totals starts the stream, or starts it again, taking back what an
// earlier run wrote.
func (in *importer) Totals(store.Totals) error {
	if in.started {
		in.rollback()
		if err := in.db.emptyAgain(in.seqs); err != nil {
			return err
		}
		*in = importer{ctx: in.ctx, db: in.db, seqs: in.seqs}
	}
	in.started = true
	return nil
}

// write gives the transaction of the next record, committing a full batch.
func (in *importer) write() (*bolt.Tx, error) {
	if err := in.ctx.Err(); err != nil {
		return nil, err
	}
	if in.tx != nil && in.n >= importBatch {
		if err := in.commit(); err != nil {
			return nil, err
		}
	}
	if in.tx == nil {
		tx, err := in.db.bolt.Begin(true)
		if err != nil {
			return nil, err
		}
		in.tx, in.n = tx, 0
	}
	in.n++
	return in.tx, nil
}

func (in *importer) commit() error {
	if in.tx == nil {
		return nil
	}
	tx := in.tx
	in.tx = nil
	return tx.Commit()
}

func (in *importer) rollback() {
	if in.tx != nil {
		_ = in.tx.Rollback()
		in.tx = nil
	}
}

func checkKey(what string, key []byte) error {
	if len(key) == 0 || len(key) > bolt.MaxKeySize {
		shown := string(key)
		if len(shown) > 60 {
			shown = shown[:60] + "…"
		}
		return store.Errorf(store.EUNPROCESSABLE, "%s %q (%d bytes) cannot be a key of a bbolt file (one is 1 to %d bytes); nothing was copied: remove it from the database, or stay on PostgreSQL",
			what, shown, len(key), bolt.MaxKeySize)
	}
	return nil
}

func (in *importer) Record(r any) error {
	tx, err := in.write()
	if err != nil {
		return err
	}
	in.last.Raise(r) // events aside: a file numbers them again
	switch r := r.(type) {
	case *store.Category:
		return categoryTable.putWhole(tx, r)
	case *store.Pet:
		return petTable.putWhole(tx, r)
	case *store.InventoryItem:
		return putInventory(tx.Bucket(bktInventory), r)
	case *store.Order:
		return orderTable.putWhole(tx, r)
	case *store.StoredAPIKey:
		if err := checkKey(fmt.Sprintf("the hash of API key %d", r.ID), r.SHA256); err != nil {
			return err
		}
		if err := putJSON(tx.Bucket(bktAPIKeys), r.ID, r); err != nil {
			return err
		}
		return tx.Bucket(bktAPIKeysByHash).Put(bytes.Clone(r.SHA256), itob(r.ID))
	case *store.Domain:
		if err := checkKey("the domain", []byte(r.Name)); err != nil {
			return err
		}
		return putDomain(tx.Bucket(bktDomains), r)
	case *store.KVEntry:
		if err := checkKey("the certificate store's key", []byte(r.Key)); err != nil {
			return err
		}
		v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(r.Value)), uint64(r.Modified.UnixNano()))
		return tx.Bucket(bktCerts).Put([]byte(r.Key), append(v, r.Value...))
	case *store.Webhook:
		return webhookTable.putWhole(tx, r)
	case *store.StoredEvent:
		return in.putEvent(tx, r)
	case *store.Delivery:
		return in.putDelivery(tx, r)
	case *store.StoredAnswer:
		k := append(append([]byte(r.Scope), 0), r.Key...)
		// The expiry index prefixes the key with 8 bytes.
		if err := checkKey(fmt.Sprintf("the Idempotency-Key of scope %q", r.Scope), append(make([]byte, 8), k...)); err != nil {
			return err
		}
		if err := tx.Bucket(bktKept).Put(k, encodeKept(r.KeptAnswer)); err != nil {
			return err
		}
		ik := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(k)), uint64(r.ExpiresAt.UnixNano()))
		return tx.Bucket(bktKeptByExpiry).Put(append(ik, k...), empty)
	}
	return store.Errorf(store.EUNPROCESSABLE, "a record of type %T, which a bbolt file cannot keep; nothing was copied", r)
}

func (in *importer) Rest(r store.Rest) error {
	in.rest = r
	in.rest.AdminTokenSHA256 = bytes.Clone(r.AdminTokenSHA256)
	in.rest.Revocations = slices.Clone(r.Revocations)
	for i, rev := range in.rest.Revocations {
		in.rest.Revocations[i].SHA256 = bytes.Clone(rev.SHA256)
	}
	return nil
}

// finish writes the singletons and continues each sequence.
func (in *importer) finish() error {
	tx, err := in.write()
	if err != nil {
		return err
	}
	r := in.rest
	dispatched := r.Dispatched.Seq
	if r.Dispatched.Tx != 0 {
		// Fanned out up to an event PostgreSQL numbered.
		dispatched = movedFloor(tx, r.Dispatched)
	}
	meta := tx.Bucket(bktMeta)
	if r.AdminTokenSHA256 != nil {
		if err := meta.Put(metaAdminHash, r.AdminTokenSHA256); err != nil {
			return err
		}
	}
	if err := putMetaJSON(tx, metaProject, &r.Project); err != nil {
		return err
	}
	if err := putMetaJSON(tx, metaSettings, &r.Settings); err != nil {
		return err
	}
	if dispatched > 0 {
		if err := meta.Put(metaDispatched, binary.BigEndian.AppendUint64(nil, dispatched)); err != nil {
			return err
		}
	}
	if in.moved == 0 && !in.carried {
		// The ids of a database that kept no event map to after the last one copied.
		if err := tx.Bucket(bktEventsMoved).Put(movedKey(store.EventID{}), binary.BigEndian.AppendUint64(nil, in.event)); err != nil {
			return err
		}
	}
	// After the records, whose versions it would raise.
	if err := tx.Bucket(bktVersions).SetSequence(uint64(max(r.VersionFloor, 0))); err != nil {
		return err
	}
	last := in.last.Past(r)
	last.Events = max(int64(in.event), r.LastIDs.Events) // a file numbers events again
	for _, c := range counters {
		if err := tx.Bucket(c.bucket).SetSequence(uint64(max(*c.last(&last), 0))); err != nil {
			return err
		}
	}
	return nil
}

var _ store.Importer = (*DB)(nil)
