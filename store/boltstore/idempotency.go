package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// Kept answers of Idempotency-Keys. bktKept maps scope, 0, StoredKey to
// expiry and creation (8-byte Unix nanoseconds each), the fingerprint's
// length (1 byte), the fingerprint, then the answer. bktKeptByExpiry holds
// expiry + the same key, so that the sweep reads no answers.
var (
	bktKept         = []byte("idempotency")
	bktKeptByExpiry = []byte("idx_idempotency_expiry")
)

func keptKey(w *store.IdempotentWrite) []byte {
	key := w.StoredKey()
	k := make([]byte, 0, len(w.Scope)+1+len(key))
	k = append(k, w.Scope...)
	k = append(k, 0)
	return append(k, key...)
}

// keyedWrite runs fn as a write. With an Idempotency-Key w, the key is
// checked first and what kept returns kept last, in the same transaction.
func (db *DB) keyedWrite(ctx context.Context, w *store.IdempotentWrite, fn func(tx *bolt.Tx) error, kept func() (record, beside any)) error {
	if w == nil {
		return db.write(ctx, fn)
	}
	return db.write(ctx, func(tx *bolt.Tx) error {
		key := keptKey(w)
		b, idx := tx.Bucket(bktKept), tx.Bucket(bktKeptByExpiry)
		if v := b.Get(key); v != nil {
			k, err := decodeKept(v)
			if err != nil {
				return err
			}
			if err := w.Found(k, db.now()); err != nil {
				return err
			}
		}
		if err := fn(tx); err != nil {
			return err
		}
		record, beside := kept()
		k, err := w.Keep(record, beside, db.now())
		if err != nil {
			return err
		}
		if old := b.Get(key); len(old) >= 8 {
			if err := idx.Delete(append(bytes.Clone(old[:8]), key...)); err != nil {
				return err
			}
		}
		if err := b.Put(key, encodeKept(k)); err != nil {
			return err
		}
		idx.FillPercent = appendFill // expiries grow with time
		ik := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(key)), uint64(k.ExpiresAt.UnixNano()))
		return idx.Put(append(ik, key...), empty)
	})
}

func encodeKept(k store.KeptAnswer) []byte {
	v := make([]byte, 0, 17+len(k.Fingerprint)+len(k.Answer))
	v = binary.BigEndian.AppendUint64(v, uint64(k.ExpiresAt.UnixNano()))
	v = binary.BigEndian.AppendUint64(v, uint64(k.CreatedAt.UnixNano()))
	v = append(v, byte(len(k.Fingerprint)))
	v = append(v, k.Fingerprint...)
	return append(v, k.Answer...)
}

var errKeptDamaged = errors.New("a kept answer of an Idempotency-Key is damaged")

// decodeKept reads a kept answer; it copies, so the result outlives the
// transaction.
func decodeKept(v []byte) (store.KeptAnswer, error) {
	if len(v) < 17 || len(v) < 17+int(v[16]) {
		return store.KeptAnswer{}, corrupt(errKeptDamaged)
	}
	n := 17 + int(v[16])
	return store.KeptAnswer{
		ExpiresAt:   time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC(),
		CreatedAt:   time.Unix(0, int64(binary.BigEndian.Uint64(v[8:]))).UTC(),
		Fingerprint: bytes.Clone(v[17:n]),
		Answer:      bytes.Clone(v[n:]),
	}, nil
}

func (db *DB) KeepAnswer(ctx context.Context, key *store.IdempotentWrite, record, beside any) error {
	if key == nil {
		return nil
	}
	return db.keyedWrite(ctx, key, func(*bolt.Tx) error { return nil }, func() (any, any) { return record, beside })
}

func (db *DB) KeptAnswer(ctx context.Context, w *store.IdempotentWrite) (store.KeptAnswer, error) {
	return readValue(ctx, db, func(tx *bolt.Tx) (store.KeptAnswer, error) {
		v := tx.Bucket(bktKept).Get(keptKey(w))
		if v == nil {
			return store.KeptAnswer{}, keptNotFound(w.Key)
		}
		k, err := decodeKept(v)
		if err == nil && !db.now().Before(k.ExpiresAt) {
			return store.KeptAnswer{}, keptNotFound(w.Key)
		}
		return k, err
	})
}

func keptNotFound(key string) error {
	return store.Errorf(store.ENOTFOUND, "no answer is kept for Idempotency-Key %q", key)
}

func (db *DB) SweepKeptAnswers(ctx context.Context, max int) (int, error) {
	var removed int
	err := db.write(ctx, func(tx *bolt.Tx) error {
		idx := tx.Bucket(bktKeptByExpiry)
		now := uint64(db.now().UnixNano())
		excess := 0
		if max > 0 {
			excess = idx.Stats().KeyN - max
		}
		// Deleting under a cursor can skip the next key: collect, then delete.
		var gone [][]byte
		c := idx.Cursor()
		for k, _ := c.First(); k != nil && len(gone) < store.MaxSweep; k, _ = c.Next() {
			if len(k) < 8 || binary.BigEndian.Uint64(k) > now && len(gone) >= excess {
				break
			}
			gone = append(gone, bytes.Clone(k))
		}
		removed = len(gone)
		return deleteKept(tx, gone)
	})
	return removed, err
}

// deleteKept deletes the answers of these keys of the expiry index.
func deleteKept(tx *bolt.Tx, gone [][]byte) error {
	for _, k := range gone {
		if err := deleteKeys(tx, indexEntry{bktKept, k[8:]}, indexEntry{bktKeptByExpiry, k}); err != nil {
			return err
		}
	}
	return nil
}

// forgetWeaklySealed deletes the admin answers an older version sealed
// under the Idempotency-Key alone, which a copy of the file could open by
// guessing the key: they can no longer be found anyway.
func forgetWeaklySealed(tx *bolt.Tx) error {
	prefix := []byte("admin:")
	var gone [][]byte
	c := tx.Bucket(bktKept).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if kept, err := decodeKept(v); err == nil && len(kept.Answer) > 0 && kept.Answer[0] == 1 {
			gone = append(gone, append(binary.BigEndian.AppendUint64(nil, uint64(kept.ExpiresAt.UnixNano())), k...))
		}
	}
	return deleteKept(tx, gone)
}
