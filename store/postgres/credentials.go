package postgres

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"petstore/bounded"
	"petstore/store"
)

// API keys are checked against the database on every use: a revoke is
// then refused by every instance the moment it has committed, and a key
// created on one instance works on every other at once. Unknown keys are
// remembered briefly, so that a flood of wrong keys cannot become a flood
// of queries.
const (
	missTTL = time.Second
	maxMiss = 10000
)

// keyLookups are the unknown keys' hashes and when they were looked up.
type keyLookups struct {
	mu     sync.Mutex
	misses *bounded.Cache[[32]byte, time.Time]
}

// missed reports whether hash was looked up and not found within missTTL.
func (k *keyLookups) missed(hash [32]byte, now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.misses == nil {
		return false
	}
	at, ok := k.misses.Get(hash)
	return ok && now.Sub(at) < missTTL
}

func (k *keyLookups) miss(hash [32]byte, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.misses == nil {
		k.misses = bounded.New[[32]byte, time.Time](maxMiss, nil)
	}
	k.misses.Add(hash, now)
}

// forget drops every remembered miss (a key was created).
func (k *keyLookups) forget() {
	k.mu.Lock()
	if k.misses != nil {
		k.misses.Purge()
	}
	k.mu.Unlock()
}

// CheckAPIKey looks a secret up in the database, in rounds (group.go).
func (db *DB) CheckAPIKey(ctx context.Context, secret string) (store.APIKey, bool, error) {
	hash := sha256.Sum256([]byte(secret))
	// A key revoked is refused even where a restore brought it back.
	if secret == "" || db.keys.missed(hash, time.Now()) || db.marks.Revoked(hash) {
		return store.APIKey{}, false, nil
	}
	k, err := db.keyRounds.do(ctx, hash)
	return k, err == nil && k.ID != 0, err
}

func (db *DB) lookUpKeys(ctx context.Context, round []*groupCall[[32]byte, store.APIKey]) {
	hashes := make([][]byte, len(round))
	for i, c := range round {
		hashes[i] = c.in[:]
	}
	now := time.Now()
	rows, err := db.pool.Query(ctx, `SELECT sha256, id, name, prefix, created_at FROM api_keys WHERE sha256 = ANY($1)`, hashes)
	found := make(map[[32]byte]store.APIKey, len(round))
	if err == nil {
		var hash []byte
		var k store.APIKey
		_, err = pgx.ForEachRow(rows, []any{&hash, &k.ID, &k.Name, &k.Prefix, &k.CreatedAt}, func() error {
			k.CreatedAt = k.CreatedAt.UTC()
			found[[32]byte(hash)] = k
			return nil
		})
	}
	for _, c := range round {
		if c.err = err; err != nil {
			continue
		}
		if c.out = found[c.in]; c.out.ID == 0 {
			db.keys.miss(c.in, now)
		}
	}
}

// AuthenticateAPIKey is CheckAPIKey for callers without a context; a
// database that cannot answer within the timeouts refuses the key.
func (db *DB) AuthenticateAPIKey(secret string) (store.APIKey, bool) {
	k, ok, err := db.CheckAPIKey(context.Background(), secret)
	return k, ok && err == nil
}

// AdminTokenKnown says why the admin token cannot be checked yet (a token
// refused then would be a 401 that is the database's fault).
func (db *DB) AdminTokenKnown() error {
	db.cache.mu.RLock()
	known := db.cache.known
	db.cache.mu.RUnlock()
	if known {
		return nil
	}
	msg := "the admin token cannot be checked: the PostgreSQL database has not been reached since start"
	if why := db.pool.health.recentFailure(time.Hour); why != "" {
		msg += " (" + why + ")"
	}
	return store.Errorf(store.EUNAVAILABLE, "%s; retry after the seconds in Retry-After", msg)
}
