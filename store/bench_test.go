package store_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"petstore/store"
)

func TestMain(m *testing.M) {
	code := m.Run()
	bigFixture.close()
	os.Exit(code)
}

// BenchmarkGetPet measures a read: one read transaction and a JSON decode.
func BenchmarkGetPet(b *testing.B) {
	db := MustOpenDB(b)
	c := mustCategory(b, db, "dogs")
	if err := db.BulkCreatePets(ctx, 1000, c.ID); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := db.Pet(ctx, int64(i%1000)+1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreatePetParallel is 64 concurrent writers (like wrk -c64 on
// this 2-core machine), grouped into shared commits and, as the baseline,
// each in its own transaction and fsync: what grouping saves.
func BenchmarkCreatePetParallel(b *testing.B) {
	for _, grouped := range []bool{true, false} {
		name := "grouped"
		if !grouped {
			name = "one-fsync-each"
		}
		b.Run(name, func(b *testing.B) {
			db := MustOpenDB(b)
			if !grouped {
				db.Unbatched()
			}
			c := mustCategory(b, db, "dogs")
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := db.CreatePet(ctx, &store.Pet{Name: "p", CategoryID: c.ID}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkCreatePetSerial is a lone writer through the batching path, which
// must cost no more than the unbatched baseline.
func BenchmarkCreatePetSerial(b *testing.B) {
	db := MustOpenDB(b)
	c := mustCategory(b, db, "dogs")
	b.ResetTimer()
	for b.Loop() {
		if err := db.CreatePet(ctx, &store.Pet{Name: "p", CategoryID: c.ID}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreatePetSerialNoBatch is the baseline: one transaction, one
// fsync, per create.
func BenchmarkCreatePetSerialNoBatch(b *testing.B) {
	db := MustOpenDB(b)
	db.Unbatched()
	c := mustCategory(b, db, "dogs")
	b.ResetTimer()
	for b.Loop() {
		if err := db.CreatePet(ctx, &store.Pet{Name: "p", CategoryID: c.ID}); err != nil {
			b.Fatal(err)
		}
	}
}

// bigFixture is a store of 100,000 pets shared by the list benchmarks, built
// once in a single transaction.
var bigFixture fixture

const bigPets = 100_000

type fixture struct {
	once sync.Once
	dir  string
	db   *store.DB
	err  error
}

func (f *fixture) get(b *testing.B) *store.DB {
	b.Helper()
	f.once.Do(func() {
		if f.dir, f.err = os.MkdirTemp("", "petstore-bench-"); f.err != nil {
			return
		}
		if f.db, f.err = store.Open(filepath.Join(f.dir, "petstore.db"), store.Options{}); f.err != nil {
			return
		}
		c := store.Category{Name: "all"}
		if f.err = f.db.CreateCategory(ctx, &c); f.err != nil {
			return
		}
		f.err = f.db.BulkCreatePets(ctx, bigPets, c.ID)
	})
	if f.err != nil {
		b.Fatal(f.err)
	}
	return f.db
}

func (f *fixture) close() {
	if f.db != nil {
		f.db.Close()
	}
	if f.dir != "" {
		os.RemoveAll(f.dir)
	}
}

func benchmarkListPets(b *testing.B, filter store.PetFilter, wantNext bool) {
	db := bigFixture.get(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		pets, next, err := db.ListPets(ctx, filter)
		if err != nil {
			b.Fatal(err)
		}
		if len(pets) != store.DefaultPageSize || (next != 0) != wantNext {
			b.Fatalf("%d pets, next %d", len(pets), next)
		}
	}
}

func BenchmarkListPetsFirstPage(b *testing.B) {
	benchmarkListPets(b, store.PetFilter{}, true)
}

func BenchmarkListPetsDeepPage(b *testing.B) {
	benchmarkListPets(b, store.PetFilter{Page: store.Page{After: bigPets - store.DefaultPageSize}}, false)
}

func BenchmarkListPetsFirstPageByStatus(b *testing.B) {
	benchmarkListPets(b, store.PetFilter{Status: store.StatusSold}, true)
}

func BenchmarkListPetsDeepPageByStatus(b *testing.B) {
	// Sold pets are every third id; this is the last full page of them.
	benchmarkListPets(b, store.PetFilter{Status: store.StatusSold, Page: store.Page{After: bigPets - 3*store.DefaultPageSize - 1}}, false)
}
