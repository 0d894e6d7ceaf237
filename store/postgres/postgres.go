// Package postgres is the store on a PostgreSQL database that several
// instances share, in plain SQL that a Postgres-compatible database runs.
package postgres

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
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

// defaultMaxConns is each instance's pool size unless the URL sets
// pool_max_conns: several instances stay inside max_connections' default.
const defaultMaxConns = 16

//go:embed migrations/*.sql
var migrations embed.FS

// DB is a store on a PostgreSQL database. All its methods are safe for
// concurrent use, from this process and from others sharing the database.
type DB struct {
	pool  *conns
	now   func() time.Time
	log   *slog.Logger
	cache cache
	keys  keyLookups
	// marks: restore.go.
	marks *store.Marks
	// behind logs a transaction counter behind the marks' (observe).
	behind store.RepeatedFailure
	// Concurrent lookups and creates go to the database together
	// (group.go).
	keyRounds    group[[32]byte, store.APIKey]
	petCreates   *creates[store.Pet]
	orderCreates *creates[store.Order]
	// stopBackground ends start-up's retries and the watcher.
	stopBackground context.CancelFunc
	background     sync.WaitGroup
	// ready is closed once start-up (schema, credentials) has succeeded.
	ready chan struct{}
	probe probe
	// probePool is readiness's own connection (health.go).
	probePool *pgxpool.Pool
	// The certificate locks this process holds, by name (kv.go).
	locksMu sync.Mutex
	locks   map[string]*heldLock
}

// Config tunes how a DB reaches its database.
type Config struct {
	// Timeouts bound every wait; zero fields take DefaultTimeouts.
	Timeouts Timeouts
	// MaxConns is the pool's size; zero means the URL's pool_max_conns, or
	// defaultMaxConns.
	MaxConns int
	// Logger says when the database cannot be reached and why; nil logs
	// nothing.
	Logger *slog.Logger
	// Background makes Connect return at once when the database cannot be
	// reached: start-up is retried, and meanwhile every method answers
	// database_unavailable. It is a service's store: its connections are
	// named petstore (unless the URL names them), for ServiceSessions.
	Background bool
	// RestoreMarks is the file of this instance's restore marks, so that a
	// restore made while it is stopped is found too; "" keeps them in
	// memory.
	RestoreMarks string
	// tracer sees every statement sent (tests).
	tracer pgx.QueryTracer
}

// Open connects to the database at url and brings its schema up to date.
func Open(ctx context.Context, url string, opts store.Options) (*DB, error) {
	return Connect(ctx, url, opts, Config{})
}

// Connect is Open with a Config.
func Connect(ctx context.Context, url string, opts store.Options, c Config) (*DB, error) {
	c.Timeouts = c.Timeouts.withDefaults()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("the database URL: %w", err)
	}
	switch {
	case c.MaxConns > 0:
		cfg.MaxConns = int32(c.MaxConns)
	case !strings.Contains(url, "pool_max_conns"):
		// pgx's default (the number of CPUs) would queue a busy instance's
		// requests behind a handful of connections.
		cfg.MaxConns = defaultMaxConns
	}
	// Per host: pgx gives each address of a multi-host URL its own timeout.
	cfg.ConnConfig.ConnectTimeout = c.Timeouts.Connect
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok && c.Background {
		cfg.ConnConfig.RuntimeParams["application_name"] = serviceName
	}
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(c.Timeouts.Statement.Milliseconds(), 10)
	// A client that vanished mid-transaction must not hold its locks.
	cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(c.Timeouts.Transaction.Milliseconds(), 10)
	(&goodHost{names: map[string][]string{}}).install(cfg)
	cfg.ConnConfig.Tracer = c.tracer // ParseConfig sets none
	name := databaseName(cfg)
	marks, err := store.LoadMarks(c.RestoreMarks, name)
	if err != nil {
		return nil, err
	}
	probeCfg := cfg.Copy()
	probeCfg.MaxConns, probeCfg.MinConns = 1, 0
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	probePool, err := pgxpool.NewWithConfig(ctx, probeCfg)
	if err != nil {
		pool.Close()
		return nil, err
	}
	db := &DB{
		pool: &conns{pool: pool, t: c.Timeouts, name: name, hosts: 1 + len(cfg.ConnConfig.Fallbacks), share: newShares(int(cfg.MaxConns)), health: &health{
			initErr: store.Errorf(store.EUNAVAILABLE, "the database has not been reached yet since start"),
		}},
		now: opts.Now, log: cmp.Or(c.Logger, slog.New(slog.DiscardHandler)), ready: make(chan struct{}), probePool: probePool, marks: marks,
	}
	if db.now == nil {
		db.now = time.Now
	}
	db.keyRounds = group[[32]byte, store.APIKey]{max: maxRound, run: db.lookUpKeys}
	db.petCreates = &creates[store.Pet]{normalize: store.NormalizePet, event: store.EventPetCreated, res: store.ResPets, set: setPetID, alone: db.createPet, together: db.petsTogether}
	db.orderCreates = &creates[store.Order]{normalize: store.NormalizeOrder, event: store.EventOrderPlaced, res: store.ResOrders, set: setOrderID, alone: db.placeOrder, together: db.ordersTogether}
	db.petCreates.start(db)
	db.orderCreates.start(db)
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	db.stopBackground = stop
	err = db.startOnce(ctx, c.Background)
	if err != nil && (!c.Background || errors.Is(err, store.ErrOtherStore)) {
		stop()
		pool.Close()
		probePool.Close()
		return nil, err
	}
	if err != nil {
		db.background.Go(func() { db.retryStart(bg) })
	} else {
		db.started(bg)
	}
	return db, nil
}

// databaseName names the database for logs, without user or password.
func databaseName(cfg *pgxpool.Config) string {
	hosts := []string{net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))}
	for _, f := range cfg.ConnConfig.Fallbacks {
		if h := net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port))); !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return strings.Join(hosts, ",") + "/" + cfg.ConnConfig.Database
}

// Close stops the background work and the renewal of the locks held
// (they expire), and closes the connections.
func (db *DB) Close() error {
	db.stopBackground()
	db.background.Wait()
	db.locksMu.Lock()
	for _, h := range db.locks {
		h.stop()
		<-h.done
	}
	db.locks = nil
	db.locksMu.Unlock()
	// pgx closes a connection cut off mid-statement with a cancel request,
	// which a frozen server holds for long: a shutdown does not wait for it.
	closed := make(chan struct{})
	go func() { db.pool.pool.Close(); db.probePool.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(closeWait):
		db.log.Warn("the database does not answer while its connections close; not waiting for them", "database", db.pool.name, "waited", closeWait)
	}
	return db.marks.Save(db.pool.name)
}

// closeWait is how long Close waits for the connections to close.
const closeWait = 2 * time.Second

// timestamp is the store's notion of now, as on bbolt: UTC, whole seconds.
func (db *DB) timestamp() time.Time { return db.now().UTC().Truncate(time.Second) }

// migrate applies the embedded migrations that the database has not seen,
// in order, with the versions table locked, so that instances starting
// together apply each once.
func (db *DB) migrate(ctx context.Context) error {
	const create = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
	)`
	if _, err := db.pool.Exec(ctx, create); err != nil {
		// Two instances creating the table at once: the loser is refused
		// (a unique violation) and finds it made.
		if !dataError(err) && store.ErrorCode(err) != store.ECONFLICT {
			return err
		}
		if _, err2 := db.pool.Exec(ctx, create); err2 != nil {
			return err
		}
	}
	files, err := migrationFiles()
	if err != nil {
		return err
	}
	return db.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE schema_migrations IN EXCLUSIVE MODE`); err != nil {
			return err
		}
		var applied int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&applied); err != nil {
			return err
		}
		if known := files[len(files)-1].version; applied > known {
			// Served all the same: old and new versions serve side by side
			// during a rolling upgrade.
			db.log.Warn(fmt.Sprintf("the database's schema is at version %d, which a newer version migrated (this one knows up to %d); serving it, as during a rolling upgrade: finish the upgrade or go back only as docs/operations.md says", applied, known), "database", db.pool.name)
		}
		for _, f := range files {
			if f.version <= applied {
				continue
			}
			sql, err := migrations.ReadFile("migrations/" + f.name)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return fmt.Errorf("migration %s: %w", f.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, f.version); err != nil {
				return err
			}
		}
		return nil
	})
}

type migrationFile struct {
	name    string
	version int
}

// migrationFiles lists the embedded migrations in order of version. Two
// with one version (branches that each added the next number) are a build
// mistake, reported by name.
func migrationFiles() ([]migrationFile, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var files []migrationFile
	byVersion := map[int]string{}
	for _, f := range names {
		base := strings.TrimPrefix(f, "migrations/")
		v, err := strconv.Atoi(base[:max(strings.IndexByte(base, '_'), 0)])
		if err != nil {
			return nil, fmt.Errorf("migration %s: no version number", base)
		}
		if other, ok := byVersion[v]; ok {
			return nil, fmt.Errorf("migrations %s and %s have the same version %d", other, base, v)
		}
		byVersion[v] = base
		files = append(files, migrationFile{base, v})
	}
	slices.SortFunc(files, func(a, b migrationFile) int { return a.version - b.version })
	return files, nil
}

// giveWay begins a background transaction that holds locks on several
// tables: a wait for a lock ends it before PostgreSQL's deadlock check
// could end whoever it waits for (a pg_restore --clean, a migration).
var giveWay = pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL lock_timeout = " + strconv.FormatInt(lockGiveWay.Milliseconds(), 10)}

const lockGiveWay = 100 * time.Millisecond

// longTxKey marks the context of a transaction that the transaction
// timeout does not bound (a move).
type longTxKey struct{}

// maxTxAttempts bounds tx's retries of a transaction that did not commit.
const maxTxAttempts = 5

// tx runs fn in a transaction and commits it, within the transaction
// timeout. A transaction that did not commit is run again when PostgreSQL
// asks (a serialization failure or a deadlock) or when the connection broke
// before the commit was sent; fn must have no effect outside it. A commit
// whose answer was lost is not retried: it may have happened.
func (db *DB) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	return db.txWith(ctx, pgx.TxOptions{}, fn)
}

func (db *DB) txWith(ctx context.Context, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err, retry := db.tryTx(ctx, opts, fn)
		if err == nil {
			return nil
		}
		if retry && attempt < maxTxAttempts && ctx.Err() == nil {
			// Give a lock holder or a reconnecting pool a moment.
			time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
			continue
		}
		return db.pool.fail(ctx, err)
	}
}

func (db *DB) tryTx(ctx context.Context, opts pgx.TxOptions, fn func(pgx.Tx) error) (err error, retry bool) {
	tctx, cancel := context.WithTimeout(ctx, db.pool.t.Transaction)
	if ctx.Value(longTxKey{}) != nil {
		tctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	tx, release, err := db.pool.begin(tctx, opts)
	if err != nil {
		// A connection found dead at BEGIN: begin dropped the pool's idle
		// ones, which died with it.
		return err, noEffect(err)
	}
	defer release()
	// The outbox: the events fn recorded go in with its changes.
	o := &outboxTx{Tx: tx}
	err = fn(o)
	if err == nil {
		err = o.flush(tctx, db.now())
	}
	if err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = tx.Rollback(rctx)
		cancel()
		return err, retryable(err) || (tctx.Err() == nil && isConnectionFailure(err) && store.ErrorCode(err) == store.EINTERNAL)
	}
	err = tx.Commit(tctx)
	return err, retryable(err)
}

// pageOf runs a keyset query for one page: query takes "id > $1" and
// "LIMIT $2" as its first parameters. It asks for one row more, to know
// whether another page follows.
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

// queryRows runs query on q and collects its rows with scan.
func queryRows[T any](ctx context.Context, q querier, scan pgx.RowToFunc[T], query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scan)
}

// filter is a condition of a list: col = value, when set.
type filter struct {
	col   string
	value any
	set   bool
}

// where is " AND col = $n" for each filter set, numbered after pageOf's
// two parameters, and their values.
func where(filters ...filter) (string, []any) {
	var sql string
	var args []any
	for _, f := range filters {
		if f.set {
			args = append(args, f.value)
			sql += " AND " + f.col + " = $" + strconv.Itoa(len(args)+2)
		}
	}
	return sql, args
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

func (db *DB) Size(ctx context.Context) (int64, error) {
	var n int64
	err := db.pool.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&n)
	return n, err
}

var _ store.Store = (*DB)(nil)
