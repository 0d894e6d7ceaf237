package main

import (
	"slices"
	"testing"
	"time"
)

// TestHeapGoesBackAfterQuiet: the heap goes back to the OS only after a
// busy spell followed by quietBeforeRelease of idle periods in a row; a
// pause shorter than that (the load benchmark's turns, a bursty client),
// or some load within it, keeps it, and an idle service never forces a
// collection.
func TestHeapGoesBackAfterQuiet(t *testing.T) {
	const period = 5 * time.Second
	quietPeriods := int(quietBeforeRelease / period)
	busy, idle, some := uint64(busyAllocBytes), uint64(0), uint64(idleAllocBytes)
	run := func(spells ...uint64) []int {
		w := quietWatch{period: period}
		var released []int
		for i, s := range spells {
			if w.release(s) {
				released = append(released, i)
			}
		}
		return released
	}
	repeat := func(s uint64, n int) []uint64 {
		out := make([]uint64, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		spells []uint64
		want   []int
	}{
		{"idle from the start", repeat(idle, 3*quietPeriods), nil},
		// The turns of the load benchmark: a slice of load, then the other
		// rows' ten seconds or so.
		{"turns with 10-s pauses", slices.Concat([]uint64{busy, idle, idle}, []uint64{busy, idle, idle}, []uint64{busy, idle, idle}), nil},
		{"busy, then quiet long enough", slices.Concat(repeat(busy, 2), repeat(idle, quietPeriods)), []int{1 + quietPeriods}},
		{"busy, then a pause one period short", slices.Concat([]uint64{busy}, repeat(idle, quietPeriods-1), []uint64{busy}, repeat(idle, quietPeriods-1)), nil},
		{"some load in the quiet starts it again", slices.Concat([]uint64{busy}, repeat(idle, quietPeriods-1), []uint64{some}, repeat(idle, quietPeriods)), []int{2 * quietPeriods}},
		{"once per busy spell", slices.Concat([]uint64{busy}, repeat(idle, 3*quietPeriods)), []int{quietPeriods}},
		{"again after the next spell", slices.Concat([]uint64{busy}, repeat(idle, quietPeriods), []uint64{busy}, repeat(idle, quietPeriods)), []int{quietPeriods, 2*quietPeriods + 1}},
	} {
		if got := run(tc.spells...); !slices.Equal(got, tc.want) {
			t.Errorf("%s: released after periods %v, want %v", tc.name, got, tc.want)
		}
	}
}
