package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"petstore/store"
)

// The collector's target and the release policy of releaseMemoryWhenIdle:
// docs/design.md ("Memory") says why these.
const (
	// Allocation rates per period telling a busy spell from an idle one.
	busyAllocBytes = 8 << 20
	idleAllocBytes = 1 << 20

	// quietBeforeRelease is how long the service stays idle after a busy
	// spell before its heap goes back to the OS; sooner, the next burst
	// faults it all in again.
	quietBeforeRelease = 30 * time.Second

	// defaultGCPercent is the collector's target unless GOGC is set: the
	// live heap is small, and Go's default collects often.
	defaultGCPercent = 400
)

// settleMemoryAfterStart gives start-up's garbage back to the OS and sets
// the collector's target unless the operator set GOGC.
func settleMemoryAfterStart(gogcSet bool) {
	debug.FreeOSMemory()
	if !gogcSet {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// releaseMemoryWhenIdle gives free heap back to the OS once the service
// was idle for quietBeforeRelease after a busy spell, judged every period
// until ctx ends: with nothing allocating, no collection frees the spell's
// garbage, and the scavenger has nothing to return.
func releaseMemoryWhenIdle(ctx context.Context, period time.Duration) {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	allocated := func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}
	last, quiet := allocated(), quietWatch{period: period}
	store.EveryTick(ctx, period, func() {
		if quiet.release(allocated() - last) {
			debug.FreeOSMemory()
		}
		last = allocated()
	})
}

// quietWatch judges, a period at a time, when a busy spell was followed by
// quietBeforeRelease of quiet.
type quietWatch struct {
	period time.Duration
	busy   bool          // a busy period came since the last release
	quiet  time.Duration // of idle periods in a row since then
}

// release takes the last period's allocations and reports whether the
// heap should go back now.
func (w *quietWatch) release(spell uint64) bool {
	switch {
	case spell >= busyAllocBytes:
		w.busy, w.quiet = true, 0
	case w.busy && spell < idleAllocBytes:
		if w.quiet += w.period; w.quiet >= quietBeforeRelease {
			w.busy, w.quiet = false, 0
			return true
		}
	default:
		w.quiet = 0 // some load: not yet quiet
	}
	return false
}
