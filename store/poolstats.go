package store

import "time"

// PoolStats describes a store's pool of database connections (PostgreSQL),
// for the service's metrics.
type PoolStats struct {
	InUse, Idle, Max int
	// Waiting is the requests waiting for a connection now.
	Waiting int
	// Acquires counts the connections handed out; AcquireWait is the time
	// spent waiting for them; AcquireTimeouts the waits that ran out.
	Acquires        int64
	AcquireWait     time.Duration
	AcquireTimeouts int64
	// Unavailable counts the database_unavailable errors.
	Unavailable int64
	// ErrorsByClass counts the database's errors by SQLSTATE class (its
	// first two characters; "08" also for connections lost on the way).
	ErrorsByClass map[string]int64
}
