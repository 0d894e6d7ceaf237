package events

import (
	"sync"
	"sync/atomic"

	"petstore/store"
)

// LagBuckets bound, in seconds, the commit-to-first-attempt histogram; the
// top buckets catch an engine that fell behind or stopped.
var LagBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900}

// Stats are what this instance's engine did since it started (a fleet's
// are the sum), for /metrics.
type Stats struct {
	fannedOut                        atomic.Uint64
	succeeded, rejected, unreachable atomic.Uint64

	mu      sync.Mutex
	lagN    uint64
	lagSum  float64
	lagHits []uint64 // per bucket of LagBuckets, not cumulative
}

// Stats are the engine's counts.
func (e *Engine) Stats() *Stats { return &e.stats }

// FannedOut is how many events this instance fanned out into deliveries.
func (s *Stats) FannedOut() uint64 { return s.fannedOut.Load() }

// Attempts counts recorded outcomes: succeeded (2xx), rejected (another
// answer) and unreachable (no answer, or not allowed).
func (s *Stats) Attempts() (succeeded, rejected, unreachable uint64) {
	return s.succeeded.Load(), s.rejected.Load(), s.unreachable.Load()
}

// Lag is the histogram of commit-to-first-attempt times: count, sum in
// seconds, and the cumulative count at each of LagBuckets.
func (s *Stats) Lag() (count uint64, sum float64, cumulative map[float64]uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cumulative = make(map[float64]uint64, len(LagBuckets))
	var n uint64
	for i, le := range LagBuckets {
		if i < len(s.lagHits) {
			n += s.lagHits[i]
		}
		cumulative[le] = n
	}
	return s.lagN, s.lagSum, cumulative
}

// attempted counts a batch's outcomes as handed to the store.
func (s *Stats) attempted(batch []store.Finished) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lagHits == nil {
		s.lagHits = make([]uint64, len(LagBuckets))
	}
	for _, f := range batch {
		switch o := &f.Outcome; {
		case o.NotSent:
		case o.Succeeded:
			s.succeeded.Add(1)
		case o.Status != 0:
			s.rejected.Add(1)
		default:
			s.unreachable.Add(1)
		}
		if f.Claimed.Attempt != 1 || f.Claimed.Manual || f.Outcome.NotSent {
			continue // a retry's wait is the schedule's, not a lag
		}
		lag := f.Outcome.AttemptedAt.Sub(f.Claimed.Event.CreatedAt).Seconds()
		s.lagN++
		s.lagSum += max(lag, 0)
		for i, le := range LagBuckets {
			if lag <= le {
				s.lagHits[i]++
				break
			}
		}
	}
}
