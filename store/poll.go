package store

import (
	"context"
	"time"
)

// EveryTick calls fn every interval until ctx ends: the loop of every job
// of the service that runs on a fixed period and waits for nothing else
// (change polls, lock leases, the event hub's feed, the sweep of kept
// answers, the DNS checks of due domains, giving memory back). A loop that
// must also wake on a signal keeps its own select; docs/design.md lists
// them.
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
