package postgres

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// group runs concurrent calls of one kind together: a call that arrives
// while a round of earlier calls is with the database waits, and the calls
// that gathered meanwhile go together in the next round, as one statement
// (and, for a write, one commit). On a machine where the service, its
// clients and PostgreSQL share a few cores, the rate of writes follows
// the CPU each costs, and most of that is per statement and per commit
// (the round trip's system calls, parsing, planning, the commit's WAL
// flush), not per row. A lone call costs what it did alone: its round
// starts at once.
//
// A round's statement starts after every call in it arrived, so a call
// sees every write committed before it began, as a statement of its own
// would.
// maxRound is the most calls in one round: enough to take every request
// of a busy instance's connections at once.
const maxRound = 256

type group[In, Out any] struct {
	// max is the most calls one round takes; more wait for the next.
	max int
	// run answers every call of a round: it sets each one's out or err.
	// Its context has the values of the round's first call but none's
	// deadline or cancellation: the pool's own timeouts bound it.
	run func(ctx context.Context, round []*groupCall[In, Out])

	mu    sync.Mutex
	queue []*groupCall[In, Out]
	// running says that a drain that loops is running: it takes the
	// calls that arrive until none waits.
	running bool
}

type groupCall[In, Out any] struct {
	ctx context.Context
	in  In
	out Out
	err error
	// gone says that the caller stopped waiting before its round began.
	gone atomic.Bool
	done chan struct{}
}

// stall is how long a call waits for a round to take it before it starts
// one of its own: a round stuck on a lock then delays the calls behind it
// by this much, not by its own timeout.
const stall = 50 * time.Millisecond

// do runs in with the calls around it and returns its answer, or ctx's
// error when ctx ends first. A call whose context ends while its round is
// with the database may still have taken effect, as a statement cancelled
// after it was sent may.
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
			return c.out, c.err
		case <-stalled.C:
			go g.drain(false) // takes c, unless a round has just taken it
		case <-ctx.Done():
			c.gone.Store(true)
			var zero Out
			return zero, ctx.Err()
		}
	}
}

// drain runs the rounds of the calls waiting: until none waits, or, for a
// drain that a stalled call started, one round.
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
			g.run(context.WithoutCancel(round[0].ctx), round)
		}
		for _, c := range round {
			close(c.done)
		}
	}
}
