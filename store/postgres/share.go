package postgres

import (
	"context"
	"sync"

	"petstore/store"
)

// shares bound the connections the work of one share (store.WithPoolShare:
// the requests of one resource) holds at once to a part of the pool. A
// table locked past the statement timeout holds every connection that
// reaches it for that long; without a bound, enough requests for it would
// hold the whole pool, and requests for other tables would wait for a
// connection and fail though their tables answer.
type shares struct {
	// per is how many connections one share may hold.
	per int
	mu  sync.Mutex
	// held has one semaphore per share name met (the resources of the
	// API: a handful).
	held map[string]chan struct{}
}

// newShares gives each share half of a pool of size connections: two
// shares stuck at once still leave other requests a connection to wait
// for, and one busy resource still gets most of an idle pool.
func newShares(size int) *shares {
	return &shares{per: max(1, size/2), held: map[string]chan struct{}{}}
}

// take waits until ctx's share has a connection to spare and takes it,
// until ctx ends (the caller's acquire deadline): then the request is
// answered database_unavailable, saying why, not left waiting. release
// gives it back. Work outside any share takes nothing.
func (s *shares) take(ctx, deadline context.Context) (release func(), err error) {
	name := store.PoolShareOf(ctx)
	if name == "" {
		return func() {}, nil
	}
	s.mu.Lock()
	sem, ok := s.held[name]
	if !ok {
		sem = make(chan struct{}, s.per)
		s.held[name] = sem
	}
	s.mu.Unlock()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	default:
	}
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-deadline.Done():
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, store.Errorf(store.EUNAVAILABLE, "requests for %s hold their share of the database connections (%d) and none was freed in time: a table they use may be locked or slow, other requests are still served; retry after the seconds in Retry-After", name, s.per)
	}
}
