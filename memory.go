package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"petstore/store"
)

// The release policy of releaseMemoryWhenIdle.
const (
	// Allocation rates, per period, that tell a busy spell (the heap may
	// have grown) from an idle one (probes, a stray request).
	busyAllocBytes = 8 << 20
	idleAllocBytes = 1 << 20

	// quietBeforeRelease is how long the service stays idle after a busy
	// spell before its heap goes back to the OS. Handing it back right
	// after a pause of a few seconds (a bursty client, the load
	// benchmark's turns) made the next burst fault the whole heap in
	// again, and the allocator's zeroing and page faults made each of that
	// burst's requests dearer (docs/performance.md, "Giving memory back").
	// Half a minute of quiet is still soon for memory on a shared VM.
	quietBeforeRelease = 30 * time.Second
)

// defaultGCPercent is the collector's target unless GOGC says otherwise.
// The live heap is small, so Go's default of 100 collects often and costs a
// noticeable share of the CPU under load. At 400 the heap may grow to about
// five times the live heap while busy, which is still little memory; idle
// memory is unchanged.
const defaultGCPercent = 400

// settleMemoryAfterStart hands the garbage of start-up (parsed documents,
// rendered pages) back to the OS rather than keep it as idle heap, and sets
// the collector's target to defaultGCPercent unless the operator set GOGC.
func settleMemoryAfterStart(gogcSet bool) {
	debug.FreeOSMemory()
	if !gogcSet {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// releaseMemoryWhenIdle gives the heap's free memory back to the OS once
// the service has been idle for quietBeforeRelease after a busy spell,
// judged every period until ctx ends.
//
// Under load the heap grows to several times the live heap (the collector
// runs at GOGC 400). When the load stops nothing allocates, so no
// collection runs (Go forces one only every two minutes), the garbage of
// the busy spell stays in use, and the scavenger, which returns only memory
// a collection freed, has nothing to return: RSS stayed near its peak for
// minutes. One forced collection and scavenge when the allocation rate
// drops costs a few milliseconds.
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

// quietWatch judges, one period's allocations at a time, when a busy spell
// has been followed by quietBeforeRelease of quiet.
type quietWatch struct {
	period time.Duration
	busy   bool          // a busy period came since the last release
	quiet  time.Duration // of idle periods in a row since then
}

// release takes the bytes allocated in the last period and reports
// whether the heap should go back to the OS now.
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
