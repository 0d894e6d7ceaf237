//go:build unix

package domaintest

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime is the process's user and system CPU time so far, for benchmarks
// that report CPU per operation.
func CPUTime(tb testing.TB) (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
