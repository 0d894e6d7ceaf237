package boltstore

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// apiKeyRecord is what the apikeys bucket holds: the key and the SHA-256 of
// its secret, never the secret.
type apiKeyRecord struct {
	store.APIKey
	Hash []byte `json:"sha256"`
}

// CreateAPIKey creates an API key and returns it with its secret. The secret
// is not stored and cannot be recovered: this is the only time it is seen.
func (db *DB) CreateAPIKey(ctx context.Context, name string) (store.APIKey, string, error) {
	secret, err := store.NewSecret(store.APIKeyPrefix)
	if err != nil {
		return store.APIKey{}, "", err
	}
	hash := sha256.Sum256([]byte(secret))
	rec := apiKeyRecord{
		APIKey: store.APIKey{
			Name:      name,
			Prefix:    secret[len(store.APIKeyPrefix) : len(store.APIKeyPrefix)+8],
			CreatedAt: db.timestamp(),
		},
		Hash: hash[:],
	}
	err = db.write(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bktAPIKeys)
		id, err := nextID(b)
		if err != nil {
			return err
		}
		rec.ID = id // overwritten by every run, so the committed run's id wins
		if err := putJSON(b, id, &rec); err != nil {
			return err
		}
		return tx.Bucket(bktAPIKeysByHash).Put(hash[:], itob(id))
	})
	if err != nil {
		return store.APIKey{}, "", err
	}
	// Only now that the key is on disk may it authenticate.
	db.keysMu.Lock()
	db.keys[hash] = rec
	db.keysMu.Unlock()
	return rec.APIKey, secret, nil
}

// APIKeys lists one page of the API keys in id order, without their
// secrets, and the After of the next page (0 when this is the last).
func (db *DB) APIKeys(ctx context.Context, p store.Page) ([]store.APIKey, int64, error) {
	keys := []store.APIKey{}
	var next int64
	err := db.read(ctx, func(tx *bolt.Tx) error {
		var err error
		next, err = walkPage(tx.Bucket(bktAPIKeys), nil, p, func(id int64, v []byte) error {
			var rec apiKeyRecord
			err := decodeJSON(id, v, &rec)
			keys = append(keys, rec.APIKey)
			return err
		})
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return keys, next, nil
}

// RevokeAPIKey deletes an API key; it stops authenticating at once.
func (db *DB) RevokeAPIKey(ctx context.Context, id int64) error {
	var hash [32]byte
	err := db.write(ctx, func(tx *bolt.Tx) error {
		var rec apiKeyRecord
		ok, err := getJSON(tx.Bucket(bktAPIKeys), id, &rec)
		if err != nil {
			return err
		}
		if !ok {
			return store.Errorf(store.ENOTFOUND, "api key %d not found", id)
		}
		copy(hash[:], rec.Hash)
		if err := tx.Bucket(bktAPIKeysByHash).Delete(rec.Hash); err != nil {
			return err
		}
		return tx.Bucket(bktAPIKeys).Delete(itob(id))
	})
	if err != nil {
		return err
	}
	db.keysMu.Lock()
	delete(db.keys, hash)
	db.keysMu.Unlock()
	return nil
}

// AuthenticateAPIKey returns the API key whose secret this is. It reads only
// memory: it runs on every write request.
//
// The map is keyed by the secret's SHA-256, so lookup timing can tell an
// attacker at most something about the hash of their own guess, never about
// a stored secret; the final comparison is constant-time all the same.
func (db *DB) AuthenticateAPIKey(secret string) (store.APIKey, bool) {
	hash := sha256.Sum256([]byte(secret))
	db.keysMu.RLock()
	rec, ok := db.keys[hash]
	db.keysMu.RUnlock()
	if !ok || subtle.ConstantTimeCompare(rec.Hash, hash[:]) != 1 {
		return store.APIKey{}, false
	}
	return rec.APIKey, true
}

// loadAPIKeys fills the in-memory key map from the file.
func (db *DB) loadAPIKeys(tx *bolt.Tx) error {
	return tx.Bucket(bktAPIKeys).ForEach(func(k, v []byte) error {
		var rec apiKeyRecord
		if err := decodeJSON(btoi(k), v, &rec); err != nil {
			return err
		}
		if len(rec.Hash) != sha256.Size {
			return fmt.Errorf("api key %d: stored hash has %d bytes", rec.ID, len(rec.Hash))
		}
		db.keys[[32]byte(rec.Hash)] = rec
		return nil
	})
}
