package handlers

import (
	"context"
	"io"
	"time"

	"petstore/store"
)

// Store is what the handlers use of the store: the entities, the
// credentials, the project and its deploys, and Ping and Size for the
// probes and /metrics. Domains and settings go through the domains
// manager, never straight to the store.
type Store interface {
	store.Pets
	store.Idempotency

	CheckAdminToken(token string) bool
	AuthenticateAPIKey(secret string) (store.APIKey, bool)
	CreateAPIKey(ctx context.Context, name string) (store.APIKey, string, error)
	APIKeys(ctx context.Context, p store.Page) ([]store.APIKey, int64, error)
	RevokeAPIKey(ctx context.Context, id int64) error

	Project(ctx context.Context) (store.Project, error)
	RecordDeploy(ctx context.Context, d store.Deploy) (store.Deploy, error)

	Ping(ctx context.Context) error
	Size(ctx context.Context) (int64, error)

	// The events and webhooks (events.go, admin_webhooks.go); delivering
	// them is events' job, with the rest of store.Events.
	Events(ctx context.Context, f store.EventFilter) ([]store.Event, error)
	OldestEvent(ctx context.Context) (store.EventID, error)
	RecordEvent(ctx context.Context, e store.PendingEvent, to int64) (store.Event, error)
	CreateWebhook(ctx context.Context, w *store.Webhook) error
	Webhook(ctx context.Context, id int64) (store.Webhook, error)
	Webhooks(ctx context.Context, p store.Page) ([]store.Webhook, int64, error)
	UpdateWebhook(ctx context.Context, id int64, fn func(*store.Webhook) error) (store.Webhook, error)
	DeleteWebhook(ctx context.Context, id int64) error
	Deliveries(ctx context.Context, webhookID int64, p store.Page) ([]store.Delivery, int64, error)
	RetryDelivery(ctx context.Context, webhookID, id int64, now time.Time) (store.Delivery, error)
}

// backuper is a store that copies its data itself, the bbolt file: it
// writes a consistent copy to the writer open returns, after telling it
// the size. A PostgreSQL database is not one: pg_dump copies a live
// database that other instances share.
type backuper interface {
	BackupSized(ctx context.Context, open func(size int64) (io.Writer, error)) (int64, error)
}

// errNoBackup answers a backup of a store that is not a backuper.
func errNoBackup() error {
	return store.Errorf(store.ENOTSUPPORTED, "the data is in PostgreSQL: back it up with pg_dump (for example: pg_dump --format=custom --file=petstore.dump \"$PETSTORE_DATABASE\")")
}
