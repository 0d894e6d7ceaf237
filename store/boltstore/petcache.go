package boltstore

import (
	"sync"
	"sync/atomic"

	"petstore/bounded"
)

// petCacheSize bounds the pets whose JSON is kept in memory: the hot set of
// a busy store. A full shard forgets its least recently read pet.
const petCacheSize = 16384

const petCacheShards = 16

// petCache keeps the stored JSON of recently read pets, so that reading a
// hot pet costs a map lookup instead of a read transaction. It never
// serves a value older than the last acknowledged write:
//   - every commit advances gen before its writers are answered;
//   - a reader notes gen before its read transaction and stores what it
//     read only if gen has not moved since (checked under the shard lock);
//   - a write that changes or deletes a pet forgets it after its commit,
//     under the same lock, before it is answered.
//
// So an entry stored after a write's forget was read after that write's
// commit. New pets need nothing: misses are not cached, ids are not reused.
type petCache struct {
	gen    atomic.Uint64
	shards [petCacheShards]petCacheShard
}

// petCacheShard is a bounded LRU. A hit moves the pet to the front, a
// write, so its lock is a plain mutex.
type petCacheShard struct {
	mu sync.Mutex
	m  *bounded.Cache[int64, cachedPet]
}

type cachedPet struct {
	json    []byte
	version int64
}

func newPetCache() *petCache {
	c := &petCache{}
	for i := range c.shards {
		c.shards[i].m = bounded.New[int64, cachedPet](petCacheSize/petCacheShards, nil)
	}
	return c
}

func (c *petCache) shard(id int64) *petCacheShard {
	return &c.shards[uint64(id)%petCacheShards]
}

// get returns the pet's cached JSON, which callers must not modify.
func (c *petCache) get(id int64) (cachedPet, bool) {
	s := c.shard(id)
	s.mu.Lock()
	v, ok := s.m.Get(id)
	s.mu.Unlock()
	return v, ok
}

func (c *petCache) generation() uint64 { return c.gen.Load() }

func (c *petCache) committed() { c.gen.Add(1) }

// fill caches v, read in a transaction begun after gen was read, unless a
// commit happened since: v may then be older than that commit.
func (c *petCache) fill(id int64, v cachedPet, gen uint64) {
	s := c.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.gen.Load() != gen {
		return
	}
	s.m.Add(id, v)
}

func (c *petCache) forget(id int64) {
	s := c.shard(id)
	s.mu.Lock()
	s.m.Remove(id)
	s.mu.Unlock()
}
