package boltstore

import (
	"context"
	"encoding/json"
	"time"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// A data file put back from a backup holds the counters of the backup:
// without more, the next pet would get an id that a client was given for
// another pet after the backup, and a key revoked since would work again.
// The marks of what this file acknowledged (store.Marks) are kept beside
// it, in MarksPath: at open, a file whose counters are below the marks
// went back in time, and its counters are raised above them, the keys
// revoked since are revoked again, and store.restored is recorded.

// resEvents is the mark of event ids: a bbolt file's events are numbered
// by its own counter, which a consumer's cursor has passed.
const resEvents = "events"

// counters are the buckets whose sequences give ids out, by resource.
var counters = []struct {
	res    string
	bucket []byte
}{
	{store.ResCategories, bktCategories}, {store.ResPets, bktPets}, {store.ResOrders, bktOrders},
	{store.ResAPIKeys, bktAPIKeys}, {store.ResWebhooks, bktWebhooks}, {store.ResDeliveries, bktDeliveries},
	{store.ResDeploys, bktMeta}, {resEvents, bktEvents},
}

// marksEvery is how often the marks follow the file's counters.
const marksEvery = time.Second

// MarksPath is the file beside the data file at path that keeps its
// restore marks.
func MarksPath(path string) string { return path + ".marks" }

// marksName names a bbolt file's marks, whatever the file is called.
const marksName = "bbolt"

func readCounters(tx *bolt.Tx) map[string]int64 {
	out := make(map[string]int64, len(counters))
	for _, c := range counters {
		out[c.res] = int64(tx.Bucket(c.bucket).Sequence())
	}
	return out
}

// openMarks loads the marks and, when the file went back in time, makes
// it continue after them. It runs in Open, before any write.
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
		headroom[c.res] = store.RewindHeadroom
		if v := marks[c.res] + headroom[c.res]; last[c.res] < marks[c.res] {
			if err := tx.Bucket(c.bucket).SetSequence(uint64(v)); err != nil {
				return err
			}
		}
	}
	r := store.Restored{Store: "bbolt", IDs: store.RolledBackIDs(last, marks, headroom)}
	for _, rev := range db.marks.Revocations() {
		id := tx.Bucket(bktAPIKeysByHash).Get(rev.SHA256)
		if id == nil {
			continue
		}
		if err := tx.Bucket(bktAPIKeys).Delete(id); err != nil {
			return err
		}
		if err := tx.Bucket(bktAPIKeysByHash).Delete(rev.SHA256); err != nil {
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

// observeMarks raises the marks to the file's counters and saves them
// when they moved.
func (db *DB) observeMarks() {
	if db.Damaged() != nil {
		return // the file is to be put back from a backup: the marks keep what it held
	}
	_ = db.read(context.Background(), func(tx *bolt.Tx) error {
		for res, v := range readCounters(tx) {
			db.marks.Acked(res, v)
		}
		return nil
	})
	if err := db.marks.Save(marksName); err != nil {
		// Until a save succeeds, a backup put back over the file can give
		// out again the ids acknowledged since, and bring back a key
		// revoked since: the operator must hear of it while it lasts.
		db.marksFailures.Failed(db.log, "saving the restore marks beside the data file failed: until it succeeds, putting back a backup can reuse ids acknowledged since and bring back keys revoked since; retrying every second",
			"marks", MarksPath(db.path), "err", err)
	} else {
		db.marksFailures.Succeeded()
	}
}

// followMarks keeps the marks up with the counters until stop is closed.
func (db *DB) followMarks(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(marksEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			db.observeMarks()
		}
	}
}

// Unrevoke forgets the revocations of the keys with these ids in the marks
// of the data file at path, for an operator who put back a backup on
// purpose to bring a revoked key back. The service must be stopped: it
// keeps the marks in memory and would write them back. It returns how
// many it forgot.
func Unrevoke(path string, ids []int64) (int, error) {
	m, err := store.LoadMarks(MarksPath(path), marksName)
	if err != nil {
		return 0, err
	}
	n := m.PardonKeys(ids)
	return n, m.Save(marksName)
}
