package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"petstore/store"
)

// Timeouts bound every wait on the database, so that a database that is
// slow, locked or gone slows the service down instead of hanging it.
type Timeouts struct {
	// Connect bounds one connection attempt to one host: a multi-host URL
	// moves on to the next host after it.
	Connect time.Duration
	// Acquire bounds the wait for a free connection of the pool.
	Acquire time.Duration
	// Statement bounds each statement (PostgreSQL's statement_timeout, and
	// the client's own deadline a little later, for a server that does not
	// answer at all).
	Statement time.Duration
	// Transaction bounds each transaction, its commit included (a commit
	// that waits for a synchronous standby that is gone ends here).
	Transaction time.Duration
}

// DefaultTimeouts are the timeouts unless the flags say otherwise.
var DefaultTimeouts = Timeouts{
	Connect:     3 * time.Second,
	Acquire:     2 * time.Second,
	Statement:   5 * time.Second,
	Transaction: 10 * time.Second,
}

func (t Timeouts) withDefaults() Timeouts {
	if t.Connect <= 0 {
		t.Connect = DefaultTimeouts.Connect
	}
	if t.Acquire <= 0 {
		t.Acquire = DefaultTimeouts.Acquire
	}
	if t.Statement <= 0 {
		t.Statement = DefaultTimeouts.Statement
	}
	if t.Transaction <= 0 {
		t.Transaction = DefaultTimeouts.Transaction
	}
	return t
}

// clientGrace is how much later than the server's statement_timeout the
// client gives up on a statement: the server's own answer, with its
// SQLSTATE, is the better one when it comes.
const clientGrace = time.Second

// conns is the pool as the store's methods use it: every statement first
// waits at most Acquire for a connection, then at most Statement for its
// answer, and every failure to reach the database in time becomes the
// store's database_unavailable error, counted for readiness and metrics.
type conns struct {
	pool *pgxpool.Pool
	t    Timeouts
	// name is the database as logs name it: host(s) and database name.
	name   string
	hosts  int // in the URL
	health *health
}

func (c *conns) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	if ctx.Value(startupKey{}) == nil {
		if err := c.health.initError(); err != nil {
			return nil, err
		}
	}
	wait := c.t.Acquire
	if stat := c.pool.Stat(); stat.TotalConns() < stat.MaxConns() && stat.IdleConns() == 0 {
		// A new connection: connecting has its own timeout, per host.
		wait += time.Duration(c.hosts) * c.t.Connect
	}
	actx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	c.health.metrics.waiting.Add(1)
	conn, err := c.pool.Acquire(actx)
	c.health.metrics.waiting.Add(-1)
	if err != nil && ctx.Err() == nil && actx.Err() != nil {
		stat := c.pool.Stat()
		err = c.unavailable(ctx, fmt.Errorf("no connection of the pool (%d in use of %d) was free within %v: %w", stat.AcquiredConns(), stat.MaxConns(), wait, err))
		c.health.metrics.acquireTimeouts.Add(1)
		return nil, err
	}
	if err != nil {
		return nil, c.fail(ctx, err)
	}
	return conn, nil
}

// statement gives ctx the client's deadline for one statement.
func (c *conns) statement(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.t.Statement+clientGrace)
}

func (c *conns) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := c.exec(ctx, sql, args...)
	for attempt := 2; err != nil && attempt <= 3 && noEffect(err); attempt++ {
		tag, err = c.exec(ctx, sql, args...) // as in Query
	}
	return tag, c.fail(ctx, err)
}

func (c *conns) exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	conn, err := c.acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer conn.Release()
	sctx, cancel := c.statement(ctx)
	defer cancel()
	return conn.Exec(sctx, sql, args...)
}

func (c *conns) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	for attempt := 1; ; attempt++ {
		rows, err := c.query(ctx, sql, args...)
		if err != nil && attempt < 3 && noEffect(err) {
			// The statement had no effect: its connection was dead before
			// it ran (the database restarted, or ended the session), or
			// PostgreSQL rolled it back for a deadlock or a serialization
			// failure. Running it again is safe.
			continue
		}
		if err != nil {
			return nil, c.fail(ctx, err)
		}
		return rows, nil
	}
}

// query runs a statement and reads its first row, so that a connection
// found dead is known before anything was returned.
func (c *conns) query(ctx context.Context, sql string, args ...any) (*connRows, error) {
	conn, err := c.acquire(ctx)
	if err != nil {
		return nil, err
	}
	sctx, cancel := c.statement(ctx)
	done := func() { cancel(); conn.Release() }
	rows, err := conn.Query(sctx, sql, args...)
	if err != nil {
		done()
		return nil, err
	}
	r := &connRows{Rows: rows, c: c, ctx: ctx, done: done}
	r.peeked = true
	if r.first = rows.Next(); !r.first {
		if err := rows.Err(); err != nil {
			rows.Close()
			done()
			return nil, err
		}
	}
	return r, nil
}

// noEffect says that a statement failed without effect: nothing was
// sent, the server said it had ended the session, or it rolled the
// statement back for a deadlock or a serialization failure.
func noEffect(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03", "40001", "40P01":
			return true
		}
		return false
	}
	return pgconn.SafeToRetry(err)
}

func (c *conns) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := c.Query(ctx, sql, args...)
	return &connRow{rows: rows, err: err}
}

// connRows releases its connection when closed, and says why the database
// failed in the store's words.
type connRows struct {
	pgx.Rows
	c      *conns
	ctx    context.Context
	done   func()
	closed bool
	// peeked: query has read the first row already; first says whether
	// there was one.
	peeked, first bool
}

func (r *connRows) Close() {
	r.Rows.Close()
	if !r.closed {
		r.closed = true
		r.done()
	}
}

func (r *connRows) Next() bool {
	if r.peeked {
		r.peeked = false
		if r.first {
			return true
		}
		r.Close()
		return false
	}
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *connRows) Err() error { return r.c.fail(r.ctx, r.Rows.Err()) }

// connRow is QueryRow's answer, as pgx's own: the first row, or ErrNoRows.
type connRow struct {
	rows pgx.Rows
	err  error
}

func (r *connRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// begin starts a transaction on a connection of the pool, within the
// transaction's deadline; the caller ends it.
func (c *conns) begin(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, *pgxpool.Conn, error) {
	conn, err := c.acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	tx, err := conn.BeginTx(ctx, opts)
	if err != nil {
		conn.Release()
		return nil, nil, c.fail(ctx, err)
	}
	return tx, conn, nil
}

// fail turns a failure to reach or use the database in time into the
// store's database_unavailable error, naming the database, the cause and
// its SQLSTATE for the log; a constraint broken into its 4xx; and leaves
// every other error (no rows, the store's own errors, the caller's
// cancellation, bugs) as it was.
func (c *conns) fail(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var se *store.Error
	if errors.As(err, &se) || errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if ctx.Err() != nil {
		// The caller gave up (a client that went away, shutdown): not the
		// database's fault.
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		c.health.metrics.sqlstate(pgErr.Code)
		switch pgErr.Code[:2] {
		case "23":
			return constraintError(pgErr)
		case "22":
			if pgErr.Code == "22021" || pgErr.Code == "22P05" {
				return store.ErrorWithCause(err, store.EINVALID, "a text value holds a character that the database cannot store (such as U+0000)")
			}
			return err
		case "08", "57":
			if pgErr.Code != "57014" {
				c.lost()
			}
			return c.unavailable(ctx, err)
		case "53", "58", "40", "55", "25", "XX":
			return c.unavailable(ctx, err)
		}
		return err
	}
	if isConnectionFailure(err) {
		c.health.metrics.sqlstate("08")
		if !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) {
			c.lost()
		}
		return c.unavailable(ctx, err)
	}
	return err
}

// lost closes the pool's idle connections after one of them turned out
// dead: a restarted database or a failover kills them all, and each would
// otherwise fail one request before the pool noticed.
func (c *conns) lost() { c.pool.Reset() }

// isConnectionFailure says that the database could not be reached, or that
// the connection broke or timed out on the client's side.
func isConnectionFailure(err error) bool {
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) || pgconn.Timeout(err) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || pgconn.SafeToRetry(err) ||
		// pgx's words for a connection it closed after an earlier failure.
		strings.Contains(err.Error(), "conn closed")
}

// unavailable is the store's database_unavailable error for err, recorded
// as the latest reason the database is not usable.
func (c *conns) unavailable(ctx context.Context, err error) error {
	why := reason(err, c.t)
	c.health.failed(why)
	return store.ErrorWithCause(fmt.Errorf("database %s: %s: %w", c.name, why, err), store.EUNAVAILABLE,
		"the database is unavailable (%s); retry after the seconds in Retry-After", why)
}

// reason says in a few words why the database failed, with the SQLSTATE
// where the server gave one.
func reason(err error, t Timeouts) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		what := pgErr.Message
		switch pgErr.Code {
		case "57014":
			what = fmt.Sprintf("a statement ran past the statement timeout of %v (a lock held too long?)", t.Statement)
		case "53300":
			what = "no connection slot is left (max_connections)"
		case "25006":
			what = "the database is read-only (a standby, or a primary being demoted)"
		case "40001", "40P01":
			what = "a serialization failure or deadlock persisted through the retries"
		case "55P03":
			what = "a lock was held longer than the wait allowed (a restore or a migration under way?)"
		case "57P01", "57P02", "57P03":
			what = "the database is shutting down or starting up"
		}
		return fmt.Sprintf("%s (SQLSTATE %s)", what, pgErr.Code)
	}
	var connectErr *pgconn.ConnectError
	switch {
	case errors.As(err, &connectErr):
		return fmt.Sprintf("cannot connect (each host tried for at most %v)", t.Connect)
	case errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err):
		return "no answer in time (the statement or transaction timeout)"
	}
	return "the connection failed"
}

// violates says that err is PostgreSQL's refusal with code (23503: a
// foreign key).
func violates(err error, code string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code
}

const foreignKey = "23503"

// dataError says that a statement failed on the data it was given (class
// 22, data exception, or 23, integrity constraint violation), not on the
// database.
func dataError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23"))
}

// constraintError maps a broken constraint that no rule of the store
// caught first to its 4xx.
func constraintError(pgErr *pgconn.PgError) error {
	switch pgErr.Code {
	case "23505":
		return store.ErrorWithCause(pgErr, store.ECONFLICT, "the record exists already")
	case "23503":
		return store.ErrorWithCause(pgErr, store.EUNPROCESSABLE, "the record refers to one that does not exist")
	}
	return store.ErrorWithCause(pgErr, store.EINVALID, "a value breaks a rule of the database")
}

// health is what the store knows of the database's state: whether the
// schema is up to date yet, and the latest failure to use it, which
// readiness reports for a while.
type health struct {
	mu sync.Mutex
	// initErr is set until start-up (schema, credentials) succeeded.
	initErr error
	// lastFailure and lastWhy are the latest database_unavailable.
	lastFailure time.Time
	lastWhy     string
	metrics     metrics
}

func (h *health) initError() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.initErr
}

func (h *health) failed(why string) {
	h.mu.Lock()
	h.lastFailure, h.lastWhy = time.Now(), why
	h.mu.Unlock()
	h.metrics.unavailable.Add(1)
}

// recentFailure is the latest failure within window, or "".
func (h *health) recentFailure(window time.Duration) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lastWhy != "" && time.Since(h.lastFailure) < window {
		return h.lastWhy
	}
	return ""
}

// metrics counts what the pool's own statistics do not.
type metrics struct {
	waiting         atomic.Int64
	acquireTimeouts atomic.Int64
	unavailable     atomic.Int64
	mu              sync.Mutex
	byClass         map[string]int64
}

// PoolStats describes the pool, for the service's metrics.
func (db *DB) PoolStats() store.PoolStats {
	stat := db.pool.pool.Stat()
	m := &db.pool.health.metrics
	out := store.PoolStats{
		InUse: int(stat.AcquiredConns()), Idle: int(stat.IdleConns()), Max: int(stat.MaxConns()),
		Waiting:  int(m.waiting.Load()),
		Acquires: stat.AcquireCount(), AcquireWait: stat.AcquireDuration(),
		AcquireTimeouts: m.acquireTimeouts.Load(), Unavailable: m.unavailable.Load(),
		ErrorsByClass: map[string]int64{},
	}
	m.mu.Lock()
	for k, v := range m.byClass {
		out.ErrorsByClass[k] = v
	}
	m.mu.Unlock()
	return out
}

func (m *metrics) sqlstate(code string) {
	m.mu.Lock()
	if m.byClass == nil {
		m.byClass = map[string]int64{}
	}
	m.byClass[code[:2]]++
	m.mu.Unlock()
}
