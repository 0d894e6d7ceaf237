// Package postgres is the store on a PostgreSQL database that several
// instances of the service share. It keeps the same rules as the bbolt
// store, each in one transaction, with plain SQL so that a
// Postgres-compatible database can run it too.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"petstore/store"
)

// defaultMaxConns is each instance's connection pool size unless the URL
// sets pool_max_conns: several instances stay well inside PostgreSQL's
// default max_connections of 100.
const defaultMaxConns = 16

//go:embed migrations/*.sql
var migrations embed.FS

// DB is a store on a PostgreSQL database. All its methods are safe for
// concurrent use, from this process and from others sharing the database.
type DB struct {
	pool  *pgxpool.Pool
	now   func() time.Time
	cache cache
	// stopWatch ends the watcher of other instances' changes; watched is
	// closed when it has ended.
	stopWatch context.CancelFunc
	watched   chan struct{}
	// The certificate locks this process holds, by name (kv.go).
	locksMu sync.Mutex
	locks   map[string]*heldLock
}

// Open connects to the database at url (a postgres:// URL) and brings its
// schema up to date.
func Open(ctx context.Context, url string, opts store.Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("the database URL: %w", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		// pgx's default (the number of CPUs, at least 4) would queue every
		// request of a busy instance behind a handful of connections; the
		// URL's pool_max_conns overrides this.
		cfg.MaxConns = defaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	db := &DB{pool: pool, now: opts.Now}
	if db.now == nil {
		db.now = time.Now
	}
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("migrating the database schema: %w", err)
	}
	// The credentials whatever the counts say (a database may have them
	// from before the counts were kept), then the counts.
	err = db.loadCredentials(ctx)
	if err == nil {
		err = db.catchUp(ctx)
	}
	if err != nil {
		pool.Close()
		return nil, err
	}
	watchCtx, stop := context.WithCancel(context.Background())
	db.stopWatch, db.watched = stop, make(chan struct{})
	go func() {
		defer close(db.watched)
		db.watch(watchCtx)
	}()
	return db, nil
}

// Close stops watching for changes, stops renewing the leases of the locks
// it holds (they expire), and closes the connections.
func (db *DB) Close() error {
	db.stopWatch()
	<-db.watched
	db.locksMu.Lock()
	for _, h := range db.locks {
		h.stop()
		<-h.done
	}
	db.locks = nil
	db.locksMu.Unlock()
	db.pool.Close()
	return nil
}

// timestamp is the store's notion of now, as on bbolt: UTC, whole seconds.
func (db *DB) timestamp() time.Time { return db.now().UTC().Truncate(time.Second) }

// Ping reports whether the database answers.
func (db *DB) Ping(ctx context.Context) error { return db.pool.Ping(ctx) }

// migrate applies the embedded migrations that the database has not seen,
// in order, each in one transaction with the version it records. The
// versions table is locked for the whole run, so that instances starting
// together apply each migration once.
func (db *DB) migrate(ctx context.Context) error {
	const create = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
	)`
	if _, err := db.pool.Exec(ctx, create); err != nil {
		// Two instances creating the table at once: one of them wins.
		if _, err2 := db.pool.Exec(ctx, create); err2 != nil {
			return err
		}
	}
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	slices.Sort(files)
	return db.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE schema_migrations IN EXCLUSIVE MODE`); err != nil {
			return err
		}
		var applied int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&applied); err != nil {
			return err
		}
		for _, f := range files {
			base := strings.TrimPrefix(f, "migrations/")
			v, err := strconv.Atoi(base[:strings.IndexByte(base, '_')])
			if err != nil {
				return fmt.Errorf("migration %s: no version number", f)
			}
			if v <= applied {
				continue
			}
			sql, err := migrations.ReadFile(f)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return fmt.Errorf("migration %s: %w", base, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// tx runs fn in a transaction and commits it. A serialization failure or a
// deadlock, which PostgreSQL asks the client to retry (and which
// distributed Postgres-compatible databases report more often), runs fn
// again; fn must have no effect outside the transaction.
func (db *DB) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := pgx.BeginFunc(ctx, db.pool, fn)
		var pgErr *pgconn.PgError
		if attempt < 10 && errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01") {
			continue
		}
		return err
	}
}

// pageOf runs a keyset query for one page: query must select rows ordered
// by id with "id > $1" and "LIMIT $2" as its first two parameters. It asks
// for one row more than the page holds, to know whether another follows,
// and returns the After of the next page, or 0 for the last one.
func pageOf[T any](ctx context.Context, q querier, p store.Page, id func(*T) int64, scan func(pgx.Row) (T, error), query string, args ...any) ([]T, int64, error) {
	size := p.Size()
	out := make([]T, 0, size)
	if p.After < 0 {
		p.After = 0
	}
	rows, err := q.Query(ctx, query, append([]any{p.After, size + 1}, args...)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var next int64
	for rows.Next() {
		if len(out) == size {
			next = id(&out[size-1])
			break
		}
		v, err := scan(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	return out, next, nil
}

// querier is what both the pool and a transaction offer.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func notFound(err error, e *store.Error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return e
	}
	return err
}

// Size is the size of the database on disk.
func (db *DB) Size(ctx context.Context) (int64, error) {
	var n int64
	err := db.pool.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&n)
	return n, err
}

var _ store.Store = (*DB)(nil)
