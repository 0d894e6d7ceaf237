//go:build !unix

package domaintest

import (
	"testing"
	"time"
)

// CPUTime reports that the process's CPU time is not measured here.
func CPUTime(testing.TB) (time.Duration, bool) { return 0, false }
