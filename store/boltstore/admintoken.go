package boltstore

import (
	"bytes"
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
	if given == "" && db.adminHash.Load() != nil {
		return "", nil // loaded at Open: the usual start, which needs no write
	}
	token, hash, err := store.AdminTokenOrNew(given)
	if err != nil {
		return "", err
	}
	var stored []byte
	err = db.write(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bktMeta)
		if old := b.Get(metaAdminHash); given == "" && old != nil {
			stored = bytes.Clone(old) // by a call that ran meanwhile
			return nil
		}
		stored = hash[:]
		return b.Put(metaAdminHash, stored)
	})
	if err != nil {
		return "", err
	}
	db.adminHash.Store(&stored)
	if given != "" || !bytes.Equal(stored, hash[:]) {
		return "", nil
	}
	return token, nil
}

// CheckAdminToken reports whether token is the admin token, in constant time.
func (db *DB) CheckAdminToken(token string) bool {
	hash := sha256.Sum256([]byte(token))
	want := db.adminHash.Load()
	return want != nil && token != "" && subtle.ConstantTimeCompare(*want, hash[:]) == 1
}
