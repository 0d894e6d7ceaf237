package boltstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"petstore/store"
)

// A data file put back from a backup would give out ids given since, and
// take keys revoked since. The marks (store.Marks), kept beside it, find
// that at open: its counters are raised, the keys revoked again, and
// store.restored recorded.

// resEvents is the mark of event ids, which a consumer's cursor has passed.
const resEvents = "events"

// counters are the buckets whose sequences give ids out, by resource, and
// the field of store.LastIDs that a move carries each in.
var counters = []struct {
	res    string
	bucket []byte
	last   func(*store.LastIDs) *int64
}{
	{store.ResCategories, bktCategories, func(l *store.LastIDs) *int64 { return &l.Categories }},
	{store.ResPets, bktPets, func(l *store.LastIDs) *int64 { return &l.Pets }},
	{store.ResOrders, bktOrders, func(l *store.LastIDs) *int64 { return &l.Orders }},
	{store.ResAPIKeys, bktAPIKeys, func(l *store.LastIDs) *int64 { return &l.APIKeys }},
	{store.ResWebhooks, bktWebhooks, func(l *store.LastIDs) *int64 { return &l.Webhooks }},
	{store.ResDeliveries, bktDeliveries, func(l *store.LastIDs) *int64 { return &l.Deliveries }},
	{store.ResDeploys, bktMeta, func(l *store.LastIDs) *int64 { return &l.Deploys }},
	{resEvents, bktEvents, func(l *store.LastIDs) *int64 { return &l.Events }},
}

// marksEvery is how often the marks follow the file's counters.
const marksEvery = time.Second

func MarksPath(path string) string { return path + ".marks" }

const marksName = "bbolt"

func readCounters(tx *bolt.Tx) map[string]int64 {
	out := make(map[string]int64, len(counters))
	for _, c := range counters {
		out[c.res] = int64(tx.Bucket(c.bucket).Sequence())
	}
	return out
}

// openMarks loads the marks and, when the file went back in time, makes
// it continue after them, before any write.
func (db *DB) openMarks() error {
	m, err := store.LoadMarks(MarksPath(db.path), marksName)
	if err != nil {
		return err
	}
	db.marks = m
	marks := m.LastIDs()
	err = db.bolt.Update(func(tx *bolt.Tx) error {
		last := readCounters(tx)
		back := false
		for res, v := range last {
			back = back || v < marks[res]
		}
		if !back {
			return nil
		}
		return db.continueAfter(tx, last, marks)
	})
	if err != nil {
		return err
	}
	db.observeMarks()
	return nil
}

// continueAfter raises the counters of tx's file above the marks, revokes
// again the keys it brought back, and records store.restored.
func (db *DB) continueAfter(tx *bolt.Tx, last, marks map[string]int64) error {
	headroom := map[string]int64{}
	for _, c := range counters {
		headroom[c.res] = db.marks.Headroom(c.res)
		if v := marks[c.res] + headroom[c.res]; last[c.res] < marks[c.res] {
			if err := tx.Bucket(c.bucket).SetSequence(uint64(v)); err != nil {
				return err
			}
		}
	}
	if err := tx.Bucket(bktVersions).SetSequence(tx.Bucket(bktEvents).Sequence()); err != nil {
		return err
	}
	r := store.Restored{Store: "bbolt", IDs: store.RolledBackIDs(last, marks, headroom)}
	for _, rev := range db.marks.Revocations() {
		id := tx.Bucket(bktAPIKeysByHash).Get(rev.SHA256)
		if id == nil {
			continue
		}
		if err := deleteKeys(tx, indexEntry{bktAPIKeys, id}, indexEntry{bktAPIKeysByHash, rev.SHA256}); err != nil {
			return err
		}
		delete(db.keys, [32]byte(rev.SHA256)) // loaded by init; nothing reads it yet
		r.RevokedAgain++
	}
	if k, v := tx.Bucket(bktEvents).Cursor().Last(); k != nil {
		if e, _, err := decodeEvent(k, v); err == nil {
			r.RestoredTo = e.ID.String()
			r.RestoredToTime = &e.CreatedAt
		}
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	db.restored = &r
	return db.emit(tx, store.EventStoreRestored, json.RawMessage(data))
}

// Restored says what the file's open found rolled back: nil when the
// file had not gone back in time.
func (db *DB) Restored() *store.Restored { return db.restored }

func (db *DB) observeMarks() {
	if db.Damaged() != nil {
		return // the file is to be put back from a backup: the marks keep what it held
	}
	_ = db.read(context.Background(), func(tx *bolt.Tx) error {
		for res, v := range readCounters(tx) {
			db.marks.Observe(res, v)
		}
		return nil
	})
	if err := db.marks.Save(marksName); err != nil {
		db.marksFailures.Failed(db.log, "saving the restore marks beside the data file failed: until it succeeds, putting back a backup can reuse ids acknowledged since and bring back keys revoked since; retrying every second",
			"marks", MarksPath(db.path), "err", err)
	} else {
		db.marksFailures.Succeeded()
	}
}

// Unrevoke forgets the revocations of the keys with these ids in the marks
// of the data file at path, for an operator who put back a backup to bring
// a revoked key back. The service must be stopped: it would write its
// marks back, so a file that a process holds is refused.
func Unrevoke(path string, ids []int64) (int, error) {
	var bdb *bolt.DB
	err := refuseDamaged(func() (err error) {
		bdb, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: openTimeout, ReadOnly: true})
		return err
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return 0, fmt.Errorf("data file %s is in use by another process: stop the service first (it would write its marks back)", path)
	} else if err == nil {
		defer bdb.Close() // holding the file's lock while the marks change
	}
	m, err := store.LoadMarks(MarksPath(path), marksName)
	if err != nil {
		return 0, err
	}
	n := m.PardonKeys(ids)
	return n, m.Save(marksName)
}
