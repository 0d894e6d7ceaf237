package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/caddyserver/certmagic"
	bolt "go.etcd.io/bbolt"
)

// certLockLease is how long a lock record is said to be valid. The records are
// for whoever inspects the file; exclusion comes from the in-process lock,
// since bbolt's file lock lets a single process own the file.
const certLockLease = time.Hour

// CertStorage returns certmagic's storage (certificates, keys, ACME account)
// backed by this file.
//
// Values are stored under their key as an 8-byte modification time (Unix
// nanoseconds) followed by the bytes. "Directories" are implicit, as
// certmagic's model has it: a key is a directory when other keys start with
// it and a slash.
func (db *DB) CertStorage() certmagic.Storage {
	return &certStorage{db: db}
}

type certStorage struct {
	db *DB
}

var (
	_ certmagic.Storage   = (*certStorage)(nil)
	_ certmagic.TryLocker = (*certStorage)(nil)
)

func (s *certStorage) String() string { return "bbolt:" + s.db.Path() }

// notExist builds the error certmagic expects for a missing key.
func notExist(key string) error {
	return fmt.Errorf("certmagic storage: key %q: %w", key, fs.ErrNotExist)
}

// cleanKey drops the slashes a key should not have at its ends.
func cleanKey(key string) string {
	return strings.Trim(key, "/")
}

// dirPrefix is what every key under the directory key starts with; the root
// directory "" holds everything.
func dirPrefix(key string) []byte {
	if key == "" {
		return nil
	}
	return []byte(key + "/")
}

// Store puts value at key, durably.
func (s *certStorage) Store(ctx context.Context, key string, value []byte) error {
	key = cleanKey(key)
	if key == "" {
		return errors.New("certmagic storage: empty key")
	}
	rec := make([]byte, 8+len(value))
	binary.BigEndian.PutUint64(rec, uint64(s.db.now().UnixNano()))
	copy(rec[8:], value)
	return s.db.write(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bktCerts).Put([]byte(key), rec)
	})
}

// Load returns the value at key.
func (s *certStorage) Load(ctx context.Context, key string) ([]byte, error) {
	key = cleanKey(key)
	var value []byte
	err := s.db.read(ctx, func(tx *bolt.Tx) error {
		rec := tx.Bucket(bktCerts).Get([]byte(key))
		if len(rec) < 8 {
			return notExist(key)
		}
		value = bytes.Clone(rec[8:]) // bbolt's bytes die with the transaction
		return nil
	})
	return value, err
}

// Delete deletes key and, when it is a directory, everything under it. A
// missing key is not an error.
func (s *certStorage) Delete(ctx context.Context, key string) error {
	key = cleanKey(key)
	return s.db.write(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bktCerts)
		var doomed [][]byte
		if key != "" && b.Get([]byte(key)) != nil {
			doomed = append(doomed, []byte(key))
		}
		prefix := dirPrefix(key)
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			doomed = append(doomed, bytes.Clone(k))
		}
		// Deleting behind a moving cursor skips keys, hence two passes.
		for _, k := range doomed {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// Exists reports whether key is a file or a directory.
func (s *certStorage) Exists(ctx context.Context, key string) bool {
	_, err := s.Stat(ctx, key)
	return err == nil
}

// Stat describes key. Directories have no size or modification time.
func (s *certStorage) Stat(ctx context.Context, key string) (certmagic.KeyInfo, error) {
	key = cleanKey(key)
	var info certmagic.KeyInfo
	err := s.db.read(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bktCerts)
		if rec := b.Get([]byte(key)); len(rec) >= 8 {
			info = certmagic.KeyInfo{
				Key:        key,
				Modified:   time.Unix(0, int64(binary.BigEndian.Uint64(rec))),
				Size:       int64(len(rec) - 8),
				IsTerminal: true,
			}
			return nil
		}
		prefix := dirPrefix(key)
		if k, _ := b.Cursor().Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
			info = certmagic.KeyInfo{Key: key, IsTerminal: false}
			return nil
		}
		return notExist(key)
	})
	return info, err
}

// List returns the keys under the directory prefix: its direct children
// (files and directories), or, when recursive, every file and directory below
// it, as FileStorage's walk does. A prefix that is a file has no children; a
// prefix that does not exist is fs.ErrNotExist.
func (s *certStorage) List(ctx context.Context, prefix string, recursive bool) ([]string, error) {
	prefix = cleanKey(prefix)
	seen := make(map[string]bool)
	var isFile bool
	err := s.db.read(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bktCerts)
		isFile = prefix != "" && b.Get([]byte(prefix)) != nil
		dir := dirPrefix(prefix)
		c := b.Cursor()
		for k, _ := c.Seek(dir); k != nil && bytes.HasPrefix(k, dir); k, _ = c.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			parts := strings.Split(string(k[len(dir):]), "/")
			if !recursive {
				parts = parts[:1]
			}
			for i := range parts {
				seen[path.Join(prefix, path.Join(parts[:i+1]...))] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(seen) == 0 && !isFile && prefix != "" {
		return nil, notExist(prefix)
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, nil
}

// Lock takes the lock called name, waiting for it as long as ctx allows.
func (s *certStorage) Lock(ctx context.Context, name string) error {
	for {
		ok, wait := s.db.tryLock(name)
		if ok {
			break
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := s.putLockRecord(ctx, name); err != nil {
		s.db.unlock(name)
		return err
	}
	return nil
}

// TryLock takes the lock called name if it is free, without waiting.
func (s *certStorage) TryLock(ctx context.Context, name string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if ok, _ := s.db.tryLock(name); !ok {
		return false, nil
	}
	if err := s.putLockRecord(ctx, name); err != nil {
		s.db.unlock(name)
		return false, err
	}
	return true, nil
}

// Unlock releases the lock called name.
func (s *certStorage) Unlock(ctx context.Context, name string) error {
	if !s.db.holdsLock(name) {
		return fmt.Errorf("certmagic storage: lock %q is not held", name)
	}
	// The lock is released even when the record cannot be deleted: the
	// record does not exclude anyone, and a stuck lock would stop renewals.
	err := s.db.write(context.WithoutCancel(ctx), func(tx *bolt.Tx) error {
		return tx.Bucket(bktCertLocks).Delete([]byte(name))
	})
	s.db.unlock(name)
	return err
}

type lockRecord struct {
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

func (s *certStorage) putLockRecord(ctx context.Context, name string) error {
	now := s.db.now()
	rec, err := json.Marshal(lockRecord{Created: now, Expires: now.Add(certLockLease)})
	if err != nil {
		return err
	}
	return s.db.write(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bktCertLocks).Put([]byte(name), rec)
	})
}

// tryLock takes the in-process lock called name if it is free; otherwise it
// returns a channel that is closed when the lock is released.
func (db *DB) tryLock(name string) (bool, <-chan struct{}) {
	db.locksMu.Lock()
	defer db.locksMu.Unlock()
	if wait, held := db.locks[name]; held {
		return false, wait
	}
	db.locks[name] = make(chan struct{})
	return true, nil
}

func (db *DB) holdsLock(name string) bool {
	db.locksMu.Lock()
	defer db.locksMu.Unlock()
	_, held := db.locks[name]
	return held
}

func (db *DB) unlock(name string) {
	db.locksMu.Lock()
	defer db.locksMu.Unlock()
	if wait, held := db.locks[name]; held {
		close(wait)
		delete(db.locks, name)
	}
}

// clearCertLocks drops the lock records found when the file is opened: bbolt
// holds the file locked for one process, so whoever wrote them has exited
// without unlocking.
func clearCertLocks(tx *bolt.Tx) error {
	if k, _ := tx.Bucket(bktCertLocks).Cursor().First(); k == nil {
		return nil
	}
	if err := tx.DeleteBucket(bktCertLocks); err != nil {
		return err
	}
	_, err := tx.CreateBucket(bktCertLocks)
	return err
}
