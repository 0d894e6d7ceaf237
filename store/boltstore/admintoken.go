package boltstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

var metaAdminHash = []byte("admin_token_sha256")

func (db *DB) EnsureAdminToken(ctx context.Context, given string) (string, error) {
	if given == "" && db.adminHash.Load() != nil {
		return "", nil // loaded at Open: the usual start, which needs no write
	}
	token, hash := store.AdminTokenOrNew(given)
	var stored []byte
	err := db.write(ctx, func(tx *bolt.Tx) error {
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

func (db *DB) CheckAdminToken(token string) bool {
	hash := sha256.Sum256([]byte(token))
	want := db.adminHash.Load()
	return want != nil && token != "" && subtle.ConstantTimeCompare(*want, hash[:]) == 1
}
