//go:build race

package events

// raceEnabled: under the race detector sync.Pool drops a share of what it
// is given back, so allocation counts measured without it do not hold.
const raceEnabled = true
