package postgres

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"petstore/store"
)

// group runs the calls that arrive while a round is with the database
// together in the next round, one statement: most of a write's CPU is per
// statement and commit, not per row. A lone call's round starts at once,
// and a round starts after its calls arrived.
const maxRound = 256

type group[In, Out any] struct {
	// max is the most calls one round takes; more wait for the next.
	max int
	// run sets each call's out or err. Its context has the values of the
	// round's first call but no deadline: the pool's timeouts bound it.
	run func(ctx context.Context, round []*groupCall[In, Out])

	mu    sync.Mutex
	queue []*groupCall[In, Out]
	// running says that a looping drain takes the calls that arrive.
	running bool
}

type groupCall[In, Out any] struct {
	ctx      context.Context
	in       In
	out      Out
	err      error
	gone     atomic.Bool // the caller stopped waiting
	panicked string
	done     chan struct{}
}

// stall is how long a call waits for a round to take it before it starts
// one of its own, so that a round stuck on a lock does not hold it.
const stall = 50 * time.Millisecond

// do runs in with the calls around it and returns its answer, or ctx's
// error when ctx ends first (when it may still have taken effect).
func (g *group[In, Out]) do(ctx context.Context, in In) (Out, error) {
	c := &groupCall[In, Out]{ctx: ctx, in: in, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, c)
	start := !g.running
	g.running = true
	g.mu.Unlock()
	if start {
		go g.drain(true)
	}
	stalled := time.NewTimer(stall)
	defer stalled.Stop()
	for {
		select {
		case <-c.done:
			if c.panicked != "" {
				// In the caller's goroutine, which the server recovers,
				// rather than the drain's, which would end the process.
				panic(c.panicked)
			}
			return c.out, c.err
		case <-stalled.C:
			go g.drain(false) // takes c, unless a round has just taken it
		case <-ctx.Done():
			c.gone.Store(true)
			return *new(Out), ctx.Err()
		}
	}
}

// drain runs rounds until none waits, or, for a stalled call, one round.
func (g *group[In, Out]) drain(loop bool) {
	round := make([]*groupCall[In, Out], 0, g.max)
	for {
		g.mu.Lock()
		n := min(len(g.queue), g.max)
		if n == 0 || !loop && len(round) > 0 {
			if loop {
				g.running = false
				g.queue = nil // let a burst's backing array go
			}
			g.mu.Unlock()
			return
		}
		round = round[:0]
		for _, c := range g.queue[:n] {
			if !c.gone.Load() {
				round = append(round, c)
			}
		}
		rest := copy(g.queue, g.queue[n:])
		clear(g.queue[rest:])
		g.queue = g.queue[:rest]
		g.mu.Unlock()
		if len(round) > 0 {
			g.runRecovered(round)
		}
		for _, c := range round {
			close(c.done)
		}
	}
}

// runRecovered runs a round, handing a panic to each of its callers.
func (g *group[In, Out]) runRecovered(round []*groupCall[In, Out]) {
	defer func() {
		if r := recover(); r != nil {
			p := fmt.Sprintf("%v (in a round of %d calls)\n%s", r, len(round), debug.Stack())
			for _, c := range round {
				c.panicked = p
			}
		}
	}()
	g.run(context.WithoutCancel(round[0].ctx), round)
}

// newRecord is a record to create and the data of its event after its id.
type newRecord[T any] struct {
	rec  *T
	data []byte
}

// creates adds records of one kind: those without an idempotency key go
// in rounds.
type creates[T any] struct {
	group[newRecord[T], int64]
	normalize func(T) (T, error)
	event     string
	// set gives a record its id and its first version.
	set func(rec *T, id int64)
	// alone adds one record with a statement of its own, or says why not.
	alone func(ctx context.Context, q querier, r newRecord[T]) (int64, error)
	// together is a round's statement, which answers rows of (n, id), n
	// the record's place in the round from 1, and leaves out what it
	// cannot add.
	together func(round []newRecord[T]) (sql string, args []any)
	res      string // in the restore marks
}

// start makes c's rounds run on db.
func (c *creates[T]) start(db *DB) {
	c.group = group[newRecord[T], int64]{max: maxRound, run: func(ctx context.Context, round []*groupCall[newRecord[T], int64]) {
		c.runRound(ctx, db, round)
	}}
}

// create adds *v, normalized, with its event: in the next round, or, with
// an idempotency key, alone.
func (c *creates[T]) create(ctx context.Context, db *DB, v *T, key *store.IdempotentWrite) error {
	in, e, err := withEvent(*v, c.normalize, c.event)
	if err != nil {
		return err
	}
	r := newRecord[T]{&in, afterID(e.Data)}
	var id int64
	for attempt := 0; ; attempt++ {
		if key == nil {
			id, err = c.do(ctx, r)
		} else {
			err = db.idempotent(ctx, key, &in, func(q querier) (err error) {
				id, err = c.alone(ctx, q, r)
				c.set(&in, id) // before its answer is kept
				return err
			})
		}
		// An id refused as one given out before: the database went back
		// in time, and a catch-up raises the sequence (restore.go).
		if attempt > 0 || !violates(err, wentBackCode) || db.catchUp(ctx) != nil {
			break
		}
	}
	err = wentBackError(err)
	if err != nil {
		return err
	}
	c.set(&in, id)
	*v = in
	db.marks.Acked(c.res, id)
	return nil
}

// runRound answers a round with one statement. The records it left out
// are added one by one after it, so that each is added or refused as if
// alone; so are all of them when one record's data failed the statement,
// and a round of one.
func (c *creates[T]) runRound(ctx context.Context, db *DB, round []*groupCall[newRecord[T], int64]) {
	if len(round) > 1 {
		recs := make([]newRecord[T], len(round))
		for i, call := range round {
			recs[i] = call.in
		}
		sql, args := c.together(recs)
		rows, err := db.pool.Query(ctx, sql, args...)
		var n, id int64
		if err == nil {
			_, err = pgx.ForEachRow(rows, []any{&n, &id}, func() error {
				round[n-1].out = id
				return nil
			})
		}
		if err != nil {
			for _, call := range round {
				// Rows read before the error were rolled back with it; on
				// data, each call's own statement below answers it.
				call.out, call.err = 0, err
			}
			if !dataError(err) {
				return
			}
		}
	}
	for _, call := range round {
		if call.out == 0 {
			call.out, call.err = c.alone(ctx, db.pool, call.in)
		}
	}
}
