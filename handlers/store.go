package handlers

import (
	"context"
	"io"
	"time"

	"petstore/metrics"
	"petstore/store"
)

// Store is what the handlers use of the store. Domains and settings go
// through the domains manager, never straight to the store.
type Store interface {
	store.Pets
	store.Idempotency

	CheckAdminToken(token string) bool
	AuthenticateAPIKey(secret string) (store.APIKey, bool)
	CreateAPIKey(ctx context.Context, name string, key *store.IdempotentWrite) (store.APIKey, string, error)
	APIKeys(ctx context.Context, p store.Page) ([]store.APIKey, int64, error)
	RevokeAPIKey(ctx context.Context, id int64) error

	Project(ctx context.Context) (store.Project, error)
	RecordDeploy(ctx context.Context, d store.Deploy) (store.Deploy, error)

	Ping(ctx context.Context) error
	Size(ctx context.Context) (int64, error)

	// The events and webhooks; delivering them is events' job.
	Events(ctx context.Context, f store.EventFilter) ([]store.Event, error)
	OldestEvent(ctx context.Context) (store.EventID, error)
	// EventCursor maps a client's cursor to the store's ids (a file moved
	// back from PostgreSQL renumbered its events).
	EventCursor(ctx context.Context, id store.EventID) (store.EventID, error)
	RecordEvent(ctx context.Context, e store.PendingEvent, to int64, key *store.IdempotentWrite) (store.Event, error)
	CreateWebhook(ctx context.Context, w *store.Webhook, key *store.IdempotentWrite) error
	Webhook(ctx context.Context, id int64) (store.Webhook, error)
	Webhooks(ctx context.Context, p store.Page) ([]store.Webhook, int64, error)
	UpdateWebhook(ctx context.Context, id int64, fn func(*store.Webhook) error, key *store.IdempotentWrite) (store.Webhook, error)
	DeleteWebhook(ctx context.Context, id int64) error
	Deliveries(ctx context.Context, webhookID int64, p store.Page) ([]store.Delivery, int64, error)
	RetryDelivery(ctx context.Context, webhookID, id int64, now time.Time, key *store.IdempotentWrite) (store.Delivery, error)
}

// FileStore is what a bbolt store this process owns does beyond Store
// (Config.File): BackupSized writes a consistent copy to open's writer
// after telling it the size, and Damaged/OnDamaged report a damaged page,
// which only restoring a backup mends. PostgreSQL is none: pg_dump copies
// a live shared database.
type FileStore interface {
	BackupSized(ctx context.Context, open func(size int64) (io.Writer, error)) (int64, error)
	Damaged() error
	OnDamaged(func(error))
}

// SharedStore is what a database shared by instances does beyond Store
// (Config.Shared): CheckAPIKey looks keys up every time (a cache could
// keep a revoked one), AdminTokenKnown turns an unknowable token into 503
// rather than 401, and PoolStats feeds the metrics.
type SharedStore interface {
	CheckAPIKey(ctx context.Context, secret string) (store.APIKey, bool, error)
	AdminTokenKnown() error
	metrics.PoolStatser
}

// errNoBackup answers a backup of a store that is not a FileStore.
var errNoBackup = store.Errorf(store.ENOTSUPPORTED, "the data is in PostgreSQL: back it up with pg_dump (for example: pg_dump --format=custom --file=petstore.dump \"$PETSTORE_DATABASE\")")
