package store

import (
	"context"
	"time"
)

// EveryTick calls fn every interval until ctx ends: how the stores and
// their readers follow what other instances write (change polls, lock
// leases, the event hub's feed, the sweep of kept answers).
func EveryTick(ctx context.Context, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}
