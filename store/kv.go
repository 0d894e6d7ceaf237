package store

import "time"

// KVInfo describes a value of the key/value space.
type KVInfo struct {
	Key      string
	Size     int64
	Modified time.Time
}

// KVDir is the prefix of the keys below key, as a directory ("" for all).
func KVDir(key string) string {
	if key == "" {
		return ""
	}
	return key + "/"
}
