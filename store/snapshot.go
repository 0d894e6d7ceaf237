package store

import (
	"context"
	"encoding/json"
	"time"
)

// A move from one store to another (an instance leaving its bbolt file for
// PostgreSQL) streams: the source gives its records one at a time, as of
// one consistent read, and the target writes them as they come, so the
// memory a move needs does not grow with the store. Locks are not
// carried: they belong to running processes.

// Streamer is a store that can give all it holds: every entity with its
// id, the hashes of the credentials (never a secret), the project, the
// domains and their settings, the key/value space of certificates, the
// webhooks (their signing secrets included: deliveries go on being signed
// with them), the events kept, the deliveries (pending and past) and the
// kept answers of Idempotency-Keys.
type Streamer interface {
	// Stream gives to what the store holds: Totals first, then each
	// record, then Rest. An error from to ends the stream with that error.
	Stream(ctx context.Context, to Sink) error
}

// Sink takes what a Streamer gives, in this order: Totals; the records,
// each kind in id (or name, or key) order, the kinds in the order of
// Totals' fields; Rest. A record and what it points at are valid until
// Stream returns, not later. A stream may start again from Totals (a
// database that ran its read transaction again): the sink starts over.
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
	// included: the target continues after them, so that no id is reused.
	LastIDs LastIDs
	// Dispatched is the last event fanned out into deliveries: the target
	// fans out the ones after it, and none twice.
	Dispatched EventID
}

// Importer is a store that can take a stream into its empty self.
type Importer interface {
	// Import refuses (ECONFLICT) a store that holds anything already.
	Import(ctx context.Context, from Streamer) error
}

// Copy copies everything from one store into another, empty one.
func Copy(ctx context.Context, from Streamer, to Importer) error {
	return to.Import(ctx, from)
}

// Snapshot is a whole stream in memory, for tests and small stores.
type Snapshot struct {
	Categories []Category
	Pets       []Pet
	Inventory  []InventoryItem
	Orders     []Order
	APIKeys    []StoredAPIKey
	Domains    []Domain
	KV         []KVEntry
	Webhooks   []Webhook
	Events     []StoredEvent
	Deliveries []Delivery
	Answers    []StoredAnswer
	Rest
}

// StoredEvent is an event as kept: Target is the one webhook it is for (a
// webhook.test), 0 for every subscriber.
type StoredEvent struct {
	Event
	Target int64
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

// Collect reads a whole stream into memory. Values that the source lends
// only for the stream's time (a bbolt file's pages) are copied.
func Collect(ctx context.Context, from Streamer) (*Snapshot, error) {
	c := collector{&Snapshot{}}
	if err := from.Stream(ctx, c); err != nil {
		return nil, err
	}
	return c.s, nil
}

// collector is Collect's Sink.
type collector struct{ s *Snapshot }

// Totals starts the stream, or starts it again (a source that retried its
// transaction).
func (c collector) Totals(Totals) error {
	*c.s = Snapshot{}
	return nil
}

func (c collector) Record(r any) error {
	s := c.s
	switch r := r.(type) {
	case *Category:
		s.Categories = append(s.Categories, *r)
	case *Pet:
		s.Pets = append(s.Pets, *r)
	case *InventoryItem:
		s.Inventory = append(s.Inventory, *r)
	case *Order:
		s.Orders = append(s.Orders, *r)
	case *StoredAPIKey:
		k := *r
		k.SHA256 = append([]byte(nil), k.SHA256...)
		s.APIKeys = append(s.APIKeys, k)
	case *Domain:
		s.Domains = append(s.Domains, *r)
	case *KVEntry:
		e := *r
		e.Value = append([]byte(nil), e.Value...)
		s.KV = append(s.KV, e)
	case *Webhook:
		w := *r
		w.Events = append([]string(nil), w.Events...)
		s.Webhooks = append(s.Webhooks, w)
	case *StoredEvent:
		e := *r
		e.Data = append(json.RawMessage(nil), e.Data...)
		s.Events = append(s.Events, e)
	case *Delivery:
		s.Deliveries = append(s.Deliveries, *r)
	case *StoredAnswer:
		a := *r
		a.Fingerprint = append([]byte(nil), a.Fingerprint...)
		a.Answer = append([]byte(nil), a.Answer...)
		s.Answers = append(s.Answers, a)
	}
	return nil
}

func (c collector) Rest(r Rest) error {
	r.AdminTokenSHA256 = append([]byte(nil), r.AdminTokenSHA256...)
	if len(r.AdminTokenSHA256) == 0 {
		r.AdminTokenSHA256 = nil
	}
	c.s.Rest = r
	return nil
}

// Stream gives the snapshot to a Sink, as a store would.
func (s *Snapshot) Stream(ctx context.Context, to Sink) error {
	err := to.Totals(Totals{
		Categories: int64(len(s.Categories)), Pets: int64(len(s.Pets)), Inventory: int64(len(s.Inventory)),
		Orders: int64(len(s.Orders)), APIKeys: int64(len(s.APIKeys)), Domains: int64(len(s.Domains)), KV: int64(len(s.KV)),
		Webhooks: int64(len(s.Webhooks)), Events: int64(len(s.Events)), Deliveries: int64(len(s.Deliveries)), Answers: int64(len(s.Answers)),
	})
	err = records(ctx, to, err, s.Categories)
	err = records(ctx, to, err, s.Pets)
	err = records(ctx, to, err, s.Inventory)
	err = records(ctx, to, err, s.Orders)
	err = records(ctx, to, err, s.APIKeys)
	err = records(ctx, to, err, s.Domains)
	err = records(ctx, to, err, s.KV)
	err = records(ctx, to, err, s.Webhooks)
	err = records(ctx, to, err, s.Events)
	err = records(ctx, to, err, s.Deliveries)
	err = records(ctx, to, err, s.Answers)
	if err != nil {
		return err
	}
	return to.Rest(s.Rest)
}

// records gives each of rs to a Sink, as record does.
func records[T any](ctx context.Context, to Sink, err error, rs []T) error {
	for i := range rs {
		err = record(ctx, to, err, &rs[i])
	}
	return err
}

func record(ctx context.Context, to Sink, err error, r any) error {
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return to.Record(r)
}
