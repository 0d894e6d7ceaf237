package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// EveryTick calls fn every interval until ctx ends: the loop of every job
// that runs on a fixed period and waits for nothing else.
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

// RepeatEvery is how often a RepeatedFailure logs a failure that goes on.
const RepeatEvery = 30 * time.Second

// RepeatedFailure is the log of a failure that repeats at every round of a
// loop: the first is logged at once, then at most one line per RepeatEvery
// with the count of those not logged, and one line when the work succeeds
// again. Its zero value is ready.
type RepeatedFailure struct {
	mu      sync.Mutex
	log     *slog.Logger
	msg     string
	last    time.Time
	dropped int
	failing bool
}

// Failed logs, or counts, a failure of the work that msg names.
func (r *RepeatedFailure) Failed(log *slog.Logger, msg string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	r.log, r.msg = log, msg
	if r.failing && now.Sub(r.last) < RepeatEvery {
		r.dropped++
		return
	}
	if r.dropped > 0 {
		msg = fmt.Sprintf("%s (%d more)", msg, r.dropped)
		args = append(args, "repeated", r.dropped)
	}
	r.failing, r.last, r.dropped = true, now, 0
	if log != nil {
		log.Warn(msg, args...)
	}
}

// Succeeded ends a run of failures: when some were not logged, one line
// says that the work succeeds again, and how many.
func (r *RepeatedFailure) Succeeded() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.failing {
		return
	}
	if r.dropped > 0 && r.log != nil {
		r.log.Info(fmt.Sprintf("%s: succeeds again (%d more failures since the last line)", r.msg, r.dropped), "repeated", r.dropped)
	}
	r.failing, r.dropped = false, 0
}
