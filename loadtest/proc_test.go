package main

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestProcCPUTimeSeesAMillisecond: two readings around 2 ms of CPU differ
// by about that much. /proc/<pid>/stat's ticks of 10 ms read no change for
// most such spans, which once left a short row with no CPU measured.
func TestProcCPUTimeSeesAMillisecond(t *testing.T) {
	before, err := procCPUTime(os.Getpid(), "loadtest")
	if err != nil {
		t.Fatal(err)
	}
	start := selfCPU(t)
	for selfCPU(t)-start < 2*time.Millisecond {
	}
	after, err := procCPUTime(os.Getpid(), "loadtest")
	if err != nil {
		t.Fatal(err)
	}
	if d := after - before; d < 2*time.Millisecond {
		t.Errorf("CPU time moved by %v over 2 ms of CPU", d)
	}
}

// selfCPU is this process's user+system time as getrusage gives it (the
// kernel's nanosecond count).
func selfCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
