package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Allocation rates, per releaseMemoryWhenIdle period, that tell a busy
// spell (the heap may have grown) from an idle one (probes, a stray request).
const (
	busyAllocBytes = 8 << 20
	idleAllocBytes = 1 << 20
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
// the service goes idle after a busy spell, every period until ctx ends.
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
	t := time.NewTicker(period)
	defer t.Stop()
	last, busy := allocated(), false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := allocated()
		switch spell := now - last; {
		case spell >= busyAllocBytes:
			busy = true
		case busy && spell < idleAllocBytes:
			debug.FreeOSMemory()
			busy = false
		}
		last = allocated()
	}
}
