// Package bolttest looks at bbolt from outside the store, for the crash
// tests and the load benchmark.
package bolttest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Check opens the data file at path read-only, as bbolt would after a
// crash, and runs its consistency check (what `bbolt check` does).
func Check(path string) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	})
}

// FsyncBaseline is bare bbolt's durable write path, that the store's is
// measured against: a transaction, and an fsync, per small value.
type FsyncBaseline struct {
	db *bolt.DB
	n  int
}

// OpenFsyncBaseline creates its file in dir.
func OpenFsyncBaseline(dir string) (*FsyncBaseline, error) {
	db, err := bolt.Open(filepath.Join(dir, "fsync-baseline.db"), 0o600, &bolt.Options{
		Timeout:      time.Second,
		FreelistType: bolt.FreelistMapType,
	})
	if err != nil {
		return nil, err
	}
	return &FsyncBaseline{db: db}, nil
}

var (
	fsyncBucket = []byte("pets")
	fsyncValue  = []byte(`{"id":1,"name":"Rex","categoryId":1,"status":"available"}..`) // 60 bytes
)

// Put writes the next value in a transaction of its own.
func (f *FsyncBaseline) Put() error {
	err := f.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(fsyncBucket)
		if err != nil {
			return err
		}
		var k [8]byte
		binary.BigEndian.PutUint64(k[:], uint64(f.n+1))
		return b.Put(k[:], fsyncValue)
	})
	if err != nil {
		return fmt.Errorf("bbolt baseline: %w", err)
	}
	f.n++
	return nil
}

func (f *FsyncBaseline) Close() error { return f.db.Close() }
