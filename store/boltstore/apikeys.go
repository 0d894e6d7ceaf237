package boltstore

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

func (db *DB) CreateAPIKey(ctx context.Context, name string, key *store.IdempotentWrite) (store.APIKey, string, error) {
	rec, secret := store.NewAPIKey(name, db.timestamp())
	err := db.keyedWrite(ctx, key, func(tx *bolt.Tx) error {
		// rec.ID is set by every run, so the committed run's id wins.
		if err := apiKeyTable.insert(tx, &rec); err != nil {
			return err
		}
		if err := tx.Bucket(bktAPIKeysByHash).Put(rec.SHA256, itob(rec.ID)); err != nil {
			return err
		}
		return db.emit(tx, store.EventAPIKeyCreated, &rec.APIKey)
	}, func() (any, any) { return &rec.APIKey, secret })
	if err != nil {
		return store.APIKey{}, "", err
	}
	// Only now that the key is on disk may it authenticate.
	db.keysMu.Lock()
	db.keys[[32]byte(rec.SHA256)] = rec
	db.keysMu.Unlock()
	return rec.APIKey, secret, nil
}

func (db *DB) APIKeys(ctx context.Context, p store.Page) ([]store.APIKey, int64, error) {
	// Decoded as a store.APIKey, a record leaves its hash behind.
	withoutHashes := table[store.APIKey]{bucket: apiKeyTable.bucket, decode: decodeJSONRecord[store.APIKey], what: apiKeyTable.what}
	return withoutHashes.page(ctx, db, nil, nil, p)
}

func (db *DB) RevokeAPIKey(ctx context.Context, id int64) error {
	var hash [32]byte
	err := db.write(ctx, func(tx *bolt.Tx) error {
		rec, err := apiKeyTable.get(tx, id)
		if err != nil {
			return err
		}
		copy(hash[:], rec.SHA256)
		if err := deleteKeys(tx, indexEntry{bktAPIKeysByHash, rec.SHA256}, indexEntry{bktAPIKeys, itob(id)}); err != nil {
			return err
		}
		return db.emit(tx, store.EventAPIKeyRevoked, store.DeletedData(id))
	})
	if err != nil {
		return err
	}
	db.keysMu.Lock()
	delete(db.keys, hash)
	db.keysMu.Unlock()
	// Beside the file, where putting back a backup cannot undo it.
	db.marks.Revoke(store.Revocation{SHA256: hash[:], KeyID: id, RevokedAt: db.now().UTC()})
	db.observeMarks()
	return nil
}

// AuthenticateAPIKey returns the API key whose secret this is, from
// memory. The map is keyed by the secret's SHA-256, so lookup timing tells
// at most of the hash of a guess; the final comparison is constant-time
// all the same.
func (db *DB) AuthenticateAPIKey(secret string) (store.APIKey, bool) {
	hash := sha256.Sum256([]byte(secret))
	db.keysMu.RLock()
	rec, ok := db.keys[hash]
	db.keysMu.RUnlock()
	if !ok || subtle.ConstantTimeCompare(rec.SHA256, hash[:]) != 1 {
		return store.APIKey{}, false
	}
	return rec.APIKey, true
}

func (db *DB) loadAPIKeys(tx *bolt.Tx) error {
	return tx.Bucket(bktAPIKeys).ForEach(func(k, v []byte) error {
		rec, err := apiKeyTable.decode(btoi(k), v)
		if err != nil {
			return err
		}
		if len(rec.SHA256) != sha256.Size {
			return fmt.Errorf("api key %d: stored hash has %d bytes", rec.ID, len(rec.SHA256))
		}
		db.keys[[32]byte(rec.SHA256)] = rec
		return nil
	})
}
