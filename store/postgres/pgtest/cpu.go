package pgtest

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPU is the CPU time the cluster's server has used so far: its
// postmaster's, its ended children's and its live children's, read from
// Linux's /proc.
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
	total := ticks(f[11]) + ticks(f[12]) + ticks(f[13]) + ticks(f[14])
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	parent := strconv.Itoa(pm)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f, err := procStat(pid); err == nil && f[1] == parent {
			total += ticks(f[11]) + ticks(f[12])
		}
	}
	// In USER_HZ, 100 wherever Linux runs PostgreSQL.
	return time.Duration(total) * (time.Second / 100), nil
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

func ticks(field string) int64 {
	n, _ := strconv.ParseInt(field, 10, 64)
	return n
}
