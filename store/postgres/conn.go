package postgres

import (
	"context"
	"fmt"
	"maps"
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
	// Statement bounds each statement (statement_timeout, and the client's
	// own deadline a little later, for a server that does not answer).
	Statement time.Duration
	// Transaction bounds each transaction, its commit included.
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
	d := DefaultTimeouts
	for _, p := range [][2]*time.Duration{{&t.Connect, &d.Connect}, {&t.Acquire, &d.Acquire}, {&t.Statement, &d.Statement}, {&t.Transaction, &d.Transaction}} {
		if *p[0] <= 0 {
			*p[0] = *p[1]
		}
	}
	return t
}

// startBudget bounds start-up's schema migration and first load, once the
// database has answered.
func (t Timeouts) startBudget() time.Duration { return 4*t.Connect + 2*t.Transaction }

// clientGrace is how much later than statement_timeout the client gives up:
// the server's own answer, with its SQLSTATE, is the better one.
const clientGrace = time.Second

// conns adds to pgxpool what pgx does not do: bounded waits for a
// connection and for the caller's share (share.go), a client deadline on
// each statement, statements run again when they had no effect, and the
// store's words for failures (classify.go).
type conns struct {
	pool   *pgxpool.Pool
	t      Timeouts
	name   string // for logs
	hosts  int    // in the URL
	health *health
	share  *shares
}

// acquire takes a connection within the acquire timeout, ctx's share of
// the pool first (share.go); release gives both back.
func (c *conns) acquire(ctx context.Context) (conn *pgxpool.Conn, release func(), err error) {
	if ctx.Value(startupKey{}) == nil {
		if err := c.health.initError(); err != nil {
			return nil, nil, err
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
	defer c.health.metrics.waiting.Add(-1)
	free, err := c.share.take(ctx, actx)
	if err != nil {
		if ctx.Err() == nil {
			c.health.metrics.acquireTimeouts.Add(1)
		}
		return nil, nil, err
	}
	conn, err = c.pool.Acquire(actx)
	if err == nil {
		return conn, func() { conn.Release(); free() }, nil
	}
	free()
	if ctx.Err() != nil || actx.Err() == nil {
		return nil, nil, c.fail(ctx, err)
	}
	stat := c.pool.Stat()
	err = c.unavailable(ctx, fmt.Errorf("no connection of the pool (%d in use of %d) was free within %v: %w", stat.AcquiredConns(), stat.MaxConns(), wait, err))
	c.health.metrics.acquireTimeouts.Add(1)
	return nil, nil, err
}

// statement gives ctx the client's deadline for one statement.
func (c *conns) statement(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.t.Statement+clientGrace)
}

// again runs a statement, and again, up to twice more, while it fails
// without effect (noEffect), when running it again is safe.
func again[T any](c *conns, run func() (T, error)) (T, error) {
	v, err := run()
	for attempt := 2; err != nil && attempt <= 3 && noEffect(err); attempt++ {
		if k, _, _ := classify(err); k == lost {
			// What ended this connection (a restart, a failover, an
			// administrator) ended the idle others too.
			c.pool.Reset()
		}
		v, err = run()
	}
	return v, err
}

func (c *conns) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := again(c, func() (pgconn.CommandTag, error) {
		conn, release, err := c.acquire(ctx)
		if err != nil {
			return pgconn.CommandTag{}, err
		}
		defer release()
		sctx, cancel := c.statement(ctx)
		defer cancel()
		return conn.Exec(sctx, sql, args...)
	})
	return tag, c.fail(ctx, err)
}

func (c *conns) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := again(c, func() (*connRows, error) { return c.query(ctx, sql, args...) })
	if err != nil {
		return nil, c.fail(ctx, err)
	}
	return rows, nil
}

// query runs a statement and reads its first row, so that a connection
// found dead is known before anything was returned.
func (c *conns) query(ctx context.Context, sql string, args ...any) (*connRows, error) {
	conn, release, err := c.acquire(ctx)
	if err != nil {
		return nil, err
	}
	sctx, cancel := c.statement(ctx)
	done := func() { cancel(); release() }
	rows, err := conn.Query(sctx, sql, args...)
	if err != nil {
		done()
		return nil, err
	}
	r := &connRows{Rows: rows, c: c, ctx: ctx, done: done, peeked: true}
	if r.first = rows.Next(); !r.first {
		if err := rows.Err(); err != nil {
			rows.Close()
			done()
			return nil, err
		}
	}
	return r, nil
}

func (c *conns) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := c.Query(ctx, sql, args...)
	return &connRow{rows: rows, err: err}
}

// connRows releases its connection when closed, and words its failures.
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
	} else if r.Rows.Next() {
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

func (c *conns) begin(ctx context.Context, opts pgx.TxOptions) (tx pgx.Tx, release func(), err error) {
	conn, release, err := c.acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	tx, err = conn.BeginTx(ctx, opts)
	if err != nil {
		release()
		return nil, nil, c.fail(ctx, err)
	}
	return tx, release, nil
}

// health is what the store knows of the database's state: whether
// start-up succeeded, and the latest failure, which messages quote.
type health struct {
	mu sync.Mutex
	// initErr is set until start-up (schema, credentials) succeeded.
	initErr     error
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
	maps.Copy(out.ErrorsByClass, m.byClass)
	m.mu.Unlock()
	return out
}

func (m *metrics) sqlstate(code string) {
	m.mu.Lock()
	if m.byClass == nil {
		m.byClass = map[string]int64{}
	}
	class := "other" // a code that is not a SQLSTATE
	if len(code) == 5 {
		class = code[:2]
	}
	m.byClass[class]++
	m.mu.Unlock()
}
