package domains

import "time"

// Backoff schedules a pending domain's background re-checks: often at
// first, since most DNS changes show within minutes, then hourly, and not
// at all once DNS propagation's longest time has passed.
type Backoff struct {
	// Steps are the waits after the first, second, ... check. Zero value:
	// 1m, 2m, 5m, 10m, 30m.
	Steps []time.Duration
	// Every is the wait once Steps are used up. Zero value: one hour.
	Every time.Duration
	// GiveUpAfter is how long after the domain was added checks stop. Zero
	// value: 48 hours.
	GiveUpAfter time.Duration
}

var defaultSteps = []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute}

// NextCheck returns when to check a domain added at addedAt again, given
// its last check and the checks made so far; false when checks should
// stop. The last one falls on the deadline, so a late record still counts.
func (b Backoff) NextCheck(addedAt, lastCheck time.Time, attempts int) (time.Time, bool) {
	steps, every := b.Steps, orDefault(b.Every, time.Hour)
	if steps == nil {
		steps = defaultSteps
	}
	deadline := addedAt.Add(orDefault(b.GiveUpAfter, 48*time.Hour))
	if lastCheck.IsZero() || lastCheck.Before(addedAt) {
		lastCheck = addedAt
	}
	if !lastCheck.Before(deadline) {
		return time.Time{}, false
	}
	wait := every
	if i := max(attempts-1, 0); i < len(steps) {
		wait = steps[i]
	}
	next := lastCheck.Add(wait)
	if next.After(deadline) {
		next = deadline
	}
	return next, true
}

// orDefault is d, or def when d is unset (not positive).
func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
