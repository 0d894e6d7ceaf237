//go:build !unix

package boltstore_test

import (
	"testing"
	"time"
)

// cpuTime reports that the process's CPU time is not measured here.
func cpuTime(*testing.B) (time.Duration, bool) { return 0, false }
