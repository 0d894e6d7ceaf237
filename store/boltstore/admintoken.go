package boltstore

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// metaAdminHash is the meta key of the admin token's SHA-256.
var metaAdminHash = []byte("admin_token_sha256")

// EnsureAdminToken makes sure an admin token exists. A given token replaces
// any earlier one. Without one, the stored token is kept; and when there is
// none, a new one is generated and returned, the only time it is seen (only
// its hash is stored). It returns "" when it generated nothing.
func (db *DB) EnsureAdminToken(ctx context.Context, given string) (string, error) {
	db.adminMu.RLock()
	have := db.adminHash != nil
	db.adminMu.RUnlock()
	if given == "" && have {
		return "", nil // loaded at Open: the usual start, which needs no write
	}
	token, hash, err := store.AdminTokenOrNew(given)
	if err != nil {
		return "", err
	}
	var stored []byte
	err = db.write(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bktMeta)
		stored = nil
		if given == "" {
			if old := b.Get(metaAdminHash); old != nil {
				stored = append([]byte(nil), old...)
				return nil
			}
		}
		return b.Put(metaAdminHash, hash[:])
	})
	if err != nil {
		return "", err
	}
	if stored != nil {
		db.setAdminHash(stored)
		return "", nil
	}
	db.setAdminHash(hash[:])
	if given != "" {
		return "", nil
	}
	return token, nil
}

// CheckAdminToken reports whether token is the admin token, in constant time.
func (db *DB) CheckAdminToken(token string) bool {
	hash := sha256.Sum256([]byte(token))
	db.adminMu.RLock()
	want := db.adminHash
	db.adminMu.RUnlock()
	return want != nil && token != "" && subtle.ConstantTimeCompare(want, hash[:]) == 1
}

func (db *DB) setAdminHash(h []byte) {
	db.adminMu.Lock()
	db.adminHash = h
	db.adminMu.Unlock()
}

func (db *DB) loadAdminHash(tx *bolt.Tx) {
	if h := tx.Bucket(bktMeta).Get(metaAdminHash); h != nil {
		db.setAdminHash(append([]byte(nil), h...))
	}
}
