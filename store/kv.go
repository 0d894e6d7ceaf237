package store

import "time"

// KVInfo describes a value of the key/value space that holds certificates,
// their keys and the ACME account (domains adapts it to certmagic's
// Storage; the store knows nothing of TLS).
type KVInfo struct {
	Key      string
	Size     int64
	Modified time.Time
}
