package postgres

import (
	"context"
	"sync"

	"petstore/store"
)

// shares bound the connections one share (store.WithPoolShare) holds at
// once to a part of the pool, so that requests for a locked table cannot
// hold the whole pool.
type shares struct {
	per  int // connections one share may hold
	mu   sync.Mutex
	held map[string]chan struct{}
}

// newShares gives each share half of the pool: two shares stuck at once
// still leave others a connection, and one busy resource gets most of an
// idle pool.
func newShares(size int) *shares {
	return &shares{per: max(1, size/2), held: map[string]chan struct{}{}}
}

// take waits until ctx's share has a connection to spare and takes it, or
// until deadline ends. Work outside any share takes nothing.
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
