// Package bounded is the service's one bounded table: every cache or
// per-client table that must not grow with what arrives is a Cache (an
// LRU: Add and Get use an entry, Peek, Contains and GetOldest do not), so
// that all forget by one rule. golang-lru is imported nowhere else.
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

// GetOrAdd returns k's entry, or one made by make and added; make's error
// adds nothing.
func GetOrAdd[K comparable, V any](c *Cache[K, V], k K, make func() (V, error)) (V, error) {
	if v, ok := c.Get(k); ok {
		return v, nil
	}
	v, err := make()
	if err == nil {
		c.Add(k, v)
	}
	return v, err
}
