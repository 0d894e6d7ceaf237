package pgtest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPU is the CPU time the cluster's server has used so far: its
// postmaster's, its ended children's and its live children's, read from
// Linux's /proc. Live processes are counted in nanoseconds (ThreadsCPU)
// where the kernel keeps them; ended children only in /proc stat's 10 ms
// ticks, so a child that ends between two readings moves its time by
// less than a tick.
func (c *Cluster) CPU() (time.Duration, error) {
	pm, err := c.PostmasterPID()
	if err != nil {
		return 0, err
	}
	f, err := procStat(pm)
	if err != nil {
		return 0, fmt.Errorf("the PostgreSQL server: %w", err)
	}
	// After the command name: utime, stime, cutime and cstime are fields
	// 11 to 14, the parent's pid field 1.
	total := liveCPU(pm, f) + tickTime(f[13], f[14])
	err = children(pm, func(pid int, f []string) { total += liveCPU(pid, f) })
	return total, err
}

// children calls fn with each child of process parent and its /proc stat
// fields.
func children(parent int, fn func(pid int, f []string)) error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f, err := procStat(pid); err == nil && f[1] == strconv.Itoa(parent) {
			fn(pid, f)
		}
	}
	return nil
}

// ProcessCPU is live process pid's CPU time so far, all its threads.
func ProcessCPU(pid int) (time.Duration, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	return liveCPU(pid, f), nil
}

// liveCPU is a live process's CPU time: ThreadsCPU's, else its stat's
// utime and stime (f).
func liveCPU(pid int, f []string) time.Duration {
	if d, ok := ThreadsCPU(pid); ok {
		return d
	}
	return tickTime(f[11], f[12])
}

// ThreadsCPU is the CPU time so far of the process pid, the sum of its
// threads' time on a CPU from /proc/<pid>/task/*/schedstat, in
// nanoseconds; false where the kernel keeps none. /proc/<pid>/stat counts
// in 10 ms ticks, which a short measurement on a loaded machine can miss
// entirely. A thread that ended takes its time with it.
func ThreadsCPU(pid int) (time.Duration, bool) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var sum time.Duration
	for _, task := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // the thread ended since the listing
		}
		var ns int64
		if err != nil {
			return 0, false
		}
		if _, err := fmt.Sscan(string(data), &ns); err != nil {
			return 0, false
		}
		sum += time.Duration(ns)
	}
	return sum, true
}

// procStat is /proc/<pid>/stat's fields after the command name, which is
// in parentheses and may hold spaces.
func procStat(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil, fmt.Errorf("unexpected /proc/%d/stat %q", pid, data)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 15 {
		return nil, fmt.Errorf("unexpected /proc/%d/stat %q", pid, data)
	}
	return f, nil
}

// tickTime is the sum of fields counted in USER_HZ, 100 wherever Linux
// runs PostgreSQL.
func tickTime(fields ...string) time.Duration {
	var n int64
	for _, f := range fields {
		v, _ := strconv.ParseInt(f, 10, 64)
		n += v
	}
	return time.Duration(n) * (time.Second / 100)
}
