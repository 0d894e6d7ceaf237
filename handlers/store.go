package handlers

import (
	"context"
	"io"

	"petstore/store"
)

// Store is what the handlers use of the store: the entities, the
// credentials, the project and its deploys, and Ping and Size for the
// probes and /metrics. Domains and settings go through the domains
// manager, never straight to the store.
type Store interface {
	store.Pets

	CheckAdminToken(token string) bool
	AuthenticateAPIKey(secret string) (store.APIKey, bool)
	CreateAPIKey(ctx context.Context, name string) (store.APIKey, string, error)
	APIKeys(ctx context.Context, p store.Page) ([]store.APIKey, int64, error)
	RevokeAPIKey(ctx context.Context, id int64) error

	Project(ctx context.Context) (store.Project, error)
	UpdateProject(ctx context.Context, fn func(*store.Project) error) (store.Project, error)
	RecordDeploy(ctx context.Context, d store.Deploy) (store.Deploy, error)

	Ping(ctx context.Context) error
	Size(ctx context.Context) (int64, error)
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
