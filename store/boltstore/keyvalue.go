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

// The key/value space: values are stored under their key as an 8-byte
// modification time (Unix nanoseconds) followed by the bytes.

// certLockLease is how long a lock record is said to be valid: the records
// are for whoever inspects the file; the in-process lock excludes.
const certLockLease = time.Hour

func (db *DB) KVPut(ctx context.Context, key string, value []byte) error {
	rec := append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(value)), uint64(db.now().UnixNano())), value...)
	return db.write(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bktCerts).Put([]byte(key), rec)
	})
}

func (db *DB) KVGet(ctx context.Context, key string) ([]byte, error) {
	return readValue(ctx, db, func(tx *bolt.Tx) ([]byte, error) {
		e, err := getKV(tx, key)
		return bytes.Clone(e.Value), err // bbolt's bytes die with the transaction
	})
}

func (db *DB) KVStat(ctx context.Context, key string) (store.KVInfo, error) {
	return readValue(ctx, db, func(tx *bolt.Tx) (store.KVInfo, error) {
		e, err := getKV(tx, key)
		return store.KVInfo{Key: key, Size: int64(len(e.Value)), Modified: e.Modified}, err
	})
}

func getKV(tx *bolt.Tx, key string) (store.KVEntry, error) {
	e, ok := decodeKV([]byte(key), tx.Bucket(bktCerts).Get([]byte(key)))
	if !ok {
		return e, store.KeyMissing(key)
	}
	return e, nil
}

// decodeKV decodes the record at key; its value is valid only in the
// transaction.
func decodeKV(key, rec []byte) (store.KVEntry, bool) {
	if len(rec) < 8 {
		return store.KVEntry{}, false
	}
	return store.KVEntry{Key: string(key), Value: rec[8:], Modified: time.Unix(0, int64(binary.BigEndian.Uint64(rec))).UTC()}, true
}

func (db *DB) KVDelete(ctx context.Context, key string) error {
	return db.write(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bktCerts)
		var doomed [][]byte
		if key != "" && b.Get([]byte(key)) != nil {
			doomed = append(doomed, []byte(key))
		}
		prefix := []byte(store.KVDir(key))
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			doomed = append(doomed, bytes.Clone(k))
		}
		for _, k := range doomed {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

func (db *DB) KVKeys(ctx context.Context, prefix string) ([]string, error) {
	keys := []string{}
	err := db.read(ctx, func(tx *bolt.Tx) error {
		dir := []byte(store.KVDir(prefix))
		c := tx.Bucket(bktCerts).Cursor()
		for k, _ := c.Seek(dir); k != nil && bytes.HasPrefix(k, dir); k, _ = c.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			keys = append(keys, string(k))
		}
		return nil
	})
	return keys, err
}

func (db *DB) Lock(ctx context.Context, name string) error {
	for {
		ok, wait := db.tryLock(name)
		if ok {
			return db.putLockRecord(ctx, name)
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (db *DB) TryLock(ctx context.Context, name string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if ok, _ := db.tryLock(name); !ok {
		return false, nil
	}
	err := db.putLockRecord(ctx, name)
	return err == nil, err
}

func (db *DB) Unlock(ctx context.Context, name string) error {
	db.locksMu.Lock()
	_, held := db.locks[name]
	db.locksMu.Unlock()
	if !held {
		return store.LockNotHeld(name)
	}
	err := db.write(context.WithoutCancel(ctx), func(tx *bolt.Tx) error {
		return tx.Bucket(bktCertLocks).Delete([]byte(name))
	})
	db.unlock(name)
	return err
}

type lockRecord struct {
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

// putLockRecord records the lock this process just took, or releases it.
func (db *DB) putLockRecord(ctx context.Context, name string) error {
	now := db.now()
	rec, err := json.Marshal(lockRecord{Created: now, Expires: now.Add(certLockLease)})
	if err == nil {
		err = db.write(ctx, func(tx *bolt.Tx) error {
			return tx.Bucket(bktCertLocks).Put([]byte(name), rec)
		})
	}
	if err != nil {
		db.unlock(name)
	}
	return err
}

// tryLock takes the in-process lock, or returns a channel closed when its
// holder releases it.
func (db *DB) tryLock(name string) (bool, <-chan struct{}) {
	db.locksMu.Lock()
	defer db.locksMu.Unlock()
	if wait, held := db.locks[name]; held {
		return false, wait
	}
	db.locks[name] = make(chan struct{})
	return true, nil
}

func (db *DB) unlock(name string) {
	db.locksMu.Lock()
	defer db.locksMu.Unlock()
	if wait, held := db.locks[name]; held {
		close(wait)
		delete(db.locks, name)
	}
}
