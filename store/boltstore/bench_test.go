package boltstore_test

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/boltstore"
)

func TestMain(m *testing.M) {
	code := m.Run()
	bigFixture.close()
	os.Exit(code)
}

// BenchmarkGetPet measures a read: one read transaction and a JSON decode.
func BenchmarkGetPet(b *testing.B) {
	db := domaintest.OpenStore(b)
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

// BenchmarkCreatePetParallel is 64 concurrent writers (like the load
// benchmark's 64 connections), grouped into shared commits by the
// committer and, as the baselines, by bbolt's own DB.Batch, and each in its
// own transaction and fsync: what grouping saves, and what the committer
// saves over the library's way.
func BenchmarkCreatePetParallel(b *testing.B) {
	for _, mode := range []struct {
		name string
		set  func(*boltstore.DB)
	}{
		{"grouped", func(*boltstore.DB) {}},
		{"bbolt-Batch", (*boltstore.DB).BoltBatched},
		{"one-fsync-each", (*boltstore.DB).Unbatched},
	} {
		b.Run(mode.name, func(b *testing.B) {
			db := domaintest.OpenStore(b)
			mode.set(db)
			c := mustCategory(b, db, "dogs")
			b.SetParallelism(32)
			cpu0, cpuOK := domaintest.CPUTime(b)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := db.CreatePet(ctx, &store.Pet{Name: "p", CategoryID: c.ID}, nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			if cpu, _ := domaintest.CPUTime(b); cpuOK {
				b.ReportMetric(float64((cpu-cpu0).Microseconds())/float64(b.N), "cpu-µs/write")
			}
		})
	}
}

// BenchmarkCreatePetSerial is a lone writer through the batching path, which
// must cost no more than the unbatched baseline.
func BenchmarkCreatePetSerial(b *testing.B) {
	db := domaintest.OpenStore(b)
	c := mustCategory(b, db, "dogs")
	b.ResetTimer()
	for b.Loop() {
		if err := db.CreatePet(ctx, &store.Pet{Name: "p", CategoryID: c.ID}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreatePetSerialNoBatch is the baseline: one transaction, one
// fsync, per create.
func BenchmarkCreatePetSerialNoBatch(b *testing.B) {
	db := domaintest.OpenStore(b)
	db.Unbatched()
	c := mustCategory(b, db, "dogs")
	b.ResetTimer()
	for b.Loop() {
		if err := db.CreatePet(ctx, &store.Pet{Name: "p", CategoryID: c.ID}, nil); err != nil {
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
	db   *boltstore.DB
	err  error
}

func (f *fixture) get(b *testing.B) *boltstore.DB {
	b.Helper()
	f.once.Do(func() {
		if f.dir, f.err = os.MkdirTemp("", "petstore-bench-"); f.err != nil {
			return
		}
		if f.db, f.err = boltstore.Open(filepath.Join(f.dir, "petstore.db"), store.Options{}); f.err != nil {
			return
		}
		c := store.Category{Name: "all"}
		if f.err = f.db.CreateCategory(ctx, &c, nil); f.err != nil {
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

// BenchmarkDurableWrites is what the load benchmark's POST rows do to the
// store: 64 concurrent writers on a 10,000-pet store, creating pets or
// ordering one unit of one of 16 stocked pets. Besides ns/op it reports the
// process CPU per write (what bounds writes per second on 2 cores) and the
// writes per group commit. In the think=busy cases each writer first burns
// BenchmarkThink's CPU, as a request's HTTP handling does in the server: how
// large groups get depends on it, since writers that come straight back
// are all queued by the time a commit ends.
func BenchmarkDurableWrites(b *testing.B) {
	const writers = 64
	setup := func(b *testing.B) (*boltstore.DB, int64) {
		db := domaintest.OpenStore(b)
		c := mustCategory(b, db, "loadtest")
		if err := db.ImportPets(ctx, c.ID, 10_000, store.StatusAvailable); err != nil {
			b.Fatal(err)
		}
		for id := int64(1); id <= 16; id++ {
			mustStock(b, db, id, store.MaxStock)
		}
		return db, c.ID
	}
	run := func(b *testing.B, db *boltstore.DB, think bool, write func() error) {
		b.ReportAllocs()
		b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		commits0, writes0 := db.CommitStats()
		pages0 := db.PagesWritten()
		cpu0, cpuOK := domaintest.CPUTime(b)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			buf := make([]byte, 128<<10)
			for pb.Next() {
				if think {
					buf[0] = sha256.Sum256(buf)[0]
				}
				if err := write(); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.StopTimer()
		cpu, _ := domaintest.CPUTime(b)
		commits, writes := db.CommitStats()
		if cpuOK {
			b.ReportMetric(float64((cpu-cpu0).Microseconds())/float64(b.N), "cpu-µs/write")
		}
		if commits > commits0 {
			b.ReportMetric(float64(writes-writes0)/float64(commits-commits0), "writes/commit")
			b.ReportMetric(float64(db.PagesWritten()-pages0)/float64(commits-commits0), "pages/commit")
		}
	}
	for _, think := range []bool{false, true} {
		name := "think=0"
		if think {
			name = "think=busy"
		}
		b.Run("CreatePet/"+name, func(b *testing.B) {
			db, catID := setup(b)
			run(b, db, think, func() error {
				return db.CreatePet(ctx, &store.Pet{Name: "Bench", CategoryID: catID, Status: store.StatusAvailable}, nil)
			})
		})
		b.Run("PlaceOrder/"+name, func(b *testing.B) {
			db, _ := setup(b)
			var n atomic.Int64
			run(b, db, think, func() error {
				return db.PlaceOrder(ctx, &store.Order{PetID: n.Add(1)%16 + 1, Quantity: 1}, nil)
			})
		})
	}
}

// BenchmarkThink is the CPU one writer burns per write in
// BenchmarkDurableWrites' think=busy cases, to subtract from their CPU per
// write.
func BenchmarkThink(b *testing.B) {
	buf := make([]byte, 128<<10)
	for b.Loop() {
		buf[0] = sha256.Sum256(buf)[0]
	}
}
