package boltstore

import (
	"context"
	"testing"

	"petstore/store"
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
		n += c.shards[i].m.Len()
	}
	if n > petCacheSize {
		t.Fatalf("%d pets cached; the bound is %d", n, petCacheSize)
	}
	if v, ok := c.get(4 * petCacheSize); !ok || string(v.json) != "x" {
		t.Fatalf("the last pet filled is not cached")
	}
}

// TestPetCacheEvictsTheLeastRecentlyRead reads, through the store, one
// more pet of a shard than the shard holds, the first of them again before
// each of the others: that one stays, and the one read least recently (the
// second) is the one forgotten.
func TestPetCacheEvictsTheLeastRecentlyRead(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	c := store.Category{Name: "dogs"}
	if err := db.CreateCategory(ctx, &c, nil); err != nil {
		t.Fatal(err)
	}
	const perShard = petCacheSize / petCacheShards
	if err := db.BulkCreatePets(ctx, (perShard+1)*petCacheShards, c.ID); err != nil {
		t.Fatal(err)
	}
	read := func(id int64) {
		if _, _, err := db.PetJSON(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	shard := db.pets.shard(petCacheShards)
	hot := int64(petCacheShards) // the pets of this shard: every petCacheShards-th id
	for i := int64(2); i <= perShard+1; i++ {
		read(hot)
		read(i * petCacheShards)
	}
	if !shard.m.Contains(hot) {
		t.Error("the pet read before every other was forgotten")
	}
	if shard.m.Contains(2 * petCacheShards) {
		t.Error("the pet read least recently is still cached")
	}
	if n := shard.m.Len(); n != perShard {
		t.Errorf("the shard holds %d pets, want %d", n, perShard)
	}
}
