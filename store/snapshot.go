package store

import (
	"context"
	"time"
)

// Snapshot is everything a store holds that another store takes over when
// an instance moves from its bbolt file to PostgreSQL: every entity with its
// id, the hashes of the credentials (never a secret), the project, the
// domains and their settings, and the key/value space of certificates.
// Locks are not carried: they belong to running processes.
type Snapshot struct {
	Categories []Category
	Pets       []Pet
	Inventory  []InventoryItem
	Orders     []Order
	APIKeys    []StoredAPIKey
	// AdminTokenSHA256 is the admin token's hash, nil when none was set.
	AdminTokenSHA256 []byte
	Project          Project
	Domains          []Domain
	Settings         Settings
	KV               []KVEntry
	// LastIDs are the last ids each sequence gave, deleted records'
	// included: the target continues after them, so that no id is reused.
	LastIDs LastIDs
}

// StoredAPIKey is an API key as stored: the SHA-256 of its secret, never
// the secret. Its JSON form is the bbolt file's record.
type StoredAPIKey struct {
	APIKey
	SHA256 []byte `json:"sha256"`
}

// KVEntry is one value of the key/value space.
type KVEntry struct {
	Key      string
	Value    []byte
	Modified time.Time
}

// LastIDs are the last ids the sequences of a store gave.
type LastIDs struct {
	Categories, Pets, Orders, APIKeys, Deploys int64
}

// Exporter is a store that can give all it holds in one consistent
// snapshot.
type Exporter interface {
	Export(ctx context.Context) (*Snapshot, error)
}

// Importer is a store that can take a snapshot into its empty self.
type Importer interface {
	// Import refuses (ECONFLICT) a store that holds anything already.
	Import(ctx context.Context, s *Snapshot) error
}

// Copy copies everything from one store into another, empty one, and
// returns what it copied.
func Copy(ctx context.Context, from Exporter, to Importer) (*Snapshot, error) {
	s, err := from.Export(ctx)
	if err != nil {
		return nil, err
	}
	if err := to.Import(ctx, s); err != nil {
		return nil, err
	}
	return s, nil
}
