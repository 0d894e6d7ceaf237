package events

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"petstore/store"
)

// LagBuckets bound, in seconds, the commit-to-first-attempt histogram; the
// top buckets catch an engine that fell behind or stopped. How long
// receivers take to answer is not lag: the attempts' outcomes show them.
var LagBuckets = [...]float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900}

// Stats are what this instance's engine did since it started (a fleet's
// are the sum), for /metrics.
type Stats struct {
	fannedOut                        atomic.Uint64
	succeeded, rejected, unreachable atomic.Uint64

	mu      sync.Mutex
	lagN    uint64
	lagSum  float64
	lagHits [len(LagBuckets)]uint64 // not cumulative
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
		n += s.lagHits[i]
		cumulative[le] = n
	}
	return s.lagN, s.lagSum, cumulative
}

// attempted counts a batch's outcomes as handed to the store.
func (s *Stats) attempted(batch []store.Finished) {
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
	}
}

// started observes a first attempt's lag as it starts, when the lag is
// known: a receiver that has not answered yet, or an attempt a shutdown
// cuts, does not keep it out.
func (s *Stats) started(d *store.Claimed, at time.Time) {
	if d.Attempt != 1 || d.Manual {
		return // a retry's wait is the schedule's, not a lag
	}
	lag := at.Sub(d.Event.CreatedAt).Seconds()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lagN++
	s.lagSum += max(lag, 0)
	if i, _ := slices.BinarySearch(LagBuckets[:], lag); i < len(LagBuckets) {
		s.lagHits[i]++ // the first bucket with lag <= le
	}
}
