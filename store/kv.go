package store

import "time"

// KVInfo describes a value of the key/value space.
type KVInfo struct {
	Key      string
	Size     int64
	Modified time.Time
}
