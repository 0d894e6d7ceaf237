// Package bounded is the one bounded table of the service: every cache and
// every per-client (or per-network) limiter table that must not grow with
// what arrives is a Cache, so that all of them forget by the same rule.
//
// The rule: a Cache holds at most its size; adding one more entry evicts
// the least recently used one, where Add and Get use an entry and Peek,
// Contains and GetOldest do not. It is golang-lru's simplelru, which no
// other package imports (TestOnlyBoundedImportsGolangLRU).
package bounded

import "github.com/hashicorp/golang-lru/v2/simplelru"

// Cache is a table of at most its size entries that evicts the least
// recently used. It is not safe for concurrent use: its owner locks it.
type Cache[K comparable, V any] = simplelru.LRU[K, V]

// New makes a Cache of size entries (at least 1); onEvict, when not nil,
// is called with each entry evicted, removed or purged.
func New[K comparable, V any](size int, onEvict func(K, V)) *Cache[K, V] {
	c, err := simplelru.NewLRU(size, simplelru.EvictCallback[K, V](onEvict))
	if err != nil {
		panic("bounded.New: " + err.Error()) // only for a size below 1
	}
	return c
}
