package boltstore

import (
	"testing"
)

// TestPetCacheRefusesReadsOlderThanACommit walks the cache's protocol step
// by step: a value read before a commit is not cached after it, a value
// read after it is, and forget drops it.
func TestPetCacheRefusesReadsOlderThanACommit(t *testing.T) {
	c := newPetCache()
	gen := c.generation()
	c.committed() // a write commits while the reader's transaction runs
	c.fill(1, cachedPet{json: []byte("old")}, gen)
	if v, ok := c.get(1); ok {
		t.Fatalf("a value read before a commit was cached: %q", v.json)
	}
	gen = c.generation()
	c.fill(1, cachedPet{json: []byte("new")}, gen)
	if v, ok := c.get(1); !ok || string(v.json) != "new" {
		t.Fatalf("get = %q, %v; want the value read after the commit", v.json, ok)
	}
	c.forget(1)
	if v, ok := c.get(1); ok {
		t.Fatalf("forgotten pet still cached: %q", v.json)
	}
}

// TestPetCacheBounded fills far past the cache's size.
func TestPetCacheBounded(t *testing.T) {
	c := newPetCache()
	for id := int64(1); id <= 4*petCacheSize; id++ {
		c.fill(id, cachedPet{json: []byte("x")}, c.generation())
	}
	n := 0
	for i := range c.shards {
		n += len(c.shards[i].m)
	}
	if n > petCacheSize {
		t.Fatalf("%d pets cached; the bound is %d", n, petCacheSize)
	}
	if v, ok := c.get(4 * petCacheSize); !ok || string(v.json) != "x" {
		t.Fatalf("the last pet filled is not cached")
	}
}
