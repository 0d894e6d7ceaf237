package store

import (
	"context"
	"time"
)

// A move from one store to another streams: the source gives its records
// one at a time, as of one consistent read, and the target writes them as
// they come, so a move's memory does not grow with the store. Locks, which
// belong to running processes, are not carried.

// Streamer is a store that can give all it holds, webhooks' signing
// secrets included, but only hashes of credentials.
type Streamer interface {
	// Stream gives to what the store holds: Totals first, then each
	// record, then Rest. An error from to ends the stream with that error.
	Stream(ctx context.Context, to Sink) error
}

// Sink takes what a Streamer gives: Totals; the records, each kind in id
// (or name, or key) order, the kinds in the order of Totals' fields; Rest.
// A record is valid until Stream returns. A stream may start again from
// Totals (a retried read transaction): the sink starts over.
type Sink interface {
	Totals(Totals) error
	// Record takes one *Category, *Pet, *InventoryItem, *Order,
	// *StoredAPIKey, *Domain, *KVEntry, *Webhook, *StoredEvent, *Delivery
	// or *StoredAnswer.
	Record(r any) error
	Rest(Rest) error
}

// Totals counts the records of each kind that a stream holds.
type Totals struct {
	Categories, Pets, Inventory, Orders, APIKeys, Domains, KV int64
	Webhooks, Events, Deliveries, Answers                     int64
}

// Rest is what a stream gives after its records: the singletons and the
// sequences.
type Rest struct {
	// AdminTokenSHA256 is the admin token's hash, nil when none was set.
	AdminTokenSHA256 []byte
	Project          Project
	Settings         Settings
	// LastIDs are the last ids each sequence gave, deleted records'
	// included, so that the target reuses none.
	LastIDs LastIDs
	// Dispatched is the last event fanned out into deliveries.
	Dispatched EventID
	// Revocations the target keeps as its own, so that an older backup
	// restored into it does not bring a revoked key back.
	Revocations []Revocation
	// VersionFloor is the version that a store gone back in time set: one
	// at or below it may have been given for a state taken back.
	VersionFloor int64
}

// Importer is a store that can take a stream into its empty self.
type Importer interface {
	// Import refuses (ECONFLICT) a store that holds anything already.
	Import(ctx context.Context, from Streamer) error
}

// StoredEvent is an event as kept: Target is the one webhook it is for (a
// webhook.test), 0 for every subscriber.
type StoredEvent struct {
	Event
	Target int64
	// Was is the id the event had in the PostgreSQL database a file took
	// it from and numbered it again (zero for none): its deliveries and
	// clients' cursors go on under it, in every store it moves to after.
	Was EventID
}

// StoredAnswer is a kept answer of an Idempotency-Key as a store keeps it:
// Key is the IdempotentWrite's StoredKey and Answer is sealed where the
// write was.
type StoredAnswer struct {
	Scope, Key string
	KeptAnswer
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
	Webhooks, Deliveries, Events               int64
}

// Raise raises the last id of r's kind to r's.
func (l *LastIDs) Raise(r any) {
	switch r := r.(type) {
	case *StoredEvent:
		l.Events = max(l.Events, int64(r.ID.Seq))
	case *Category:
		l.Categories = max(l.Categories, r.ID)
	case *Pet:
		l.Pets = max(l.Pets, r.ID)
	case *Order:
		l.Orders = max(l.Orders, r.ID)
	case *StoredAPIKey:
		l.APIKeys = max(l.APIKeys, r.ID)
	case *Webhook:
		l.Webhooks = max(l.Webhooks, r.ID)
	case *Delivery:
		l.Deliveries = max(l.Deliveries, r.ID)
	}
}

// Past is l raised to the last ids the stream's store gave and to its
// project's deploys: where an import's sequences go on.
func (l LastIDs) Past(r Rest) LastIDs {
	for _, d := range r.Project.Deploys {
		l.Deploys = max(l.Deploys, d.ID)
	}
	o := r.LastIDs
	return LastIDs{Categories: max(l.Categories, o.Categories), Pets: max(l.Pets, o.Pets), Orders: max(l.Orders, o.Orders),
		APIKeys: max(l.APIKeys, o.APIKeys), Deploys: max(l.Deploys, o.Deploys), Webhooks: max(l.Webhooks, o.Webhooks),
		Deliveries: max(l.Deliveries, o.Deliveries), Events: max(l.Events, o.Events)}
}
