package postgres_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
)

// BenchmarkRounds is 64 concurrent callers (like the load benchmark's 64
// connections) on a durable cluster, creating pets and checking an API
// key through the store's rounds (group.go) and, as the library's way,
// each call with a statement of its own on a pgx pool of the store's size:
// what rounds save in time, in this process's CPU and in PostgreSQL's.
func BenchmarkRounds(b *testing.B) {
	cluster := pgtest.PrivateDurable(b)
	ctx := context.Background()
	const keySQL = `SELECT sha256, id, name, prefix, created_at FROM api_keys WHERE sha256 = $1`
	for _, c := range []struct {
		name string
		// prepare readies the database and returns one call.
		prepare func(b *testing.B, db *postgres.DB, pool *pgxpool.Pool) func() error
	}{
		{"create/rounds", func(b *testing.B, db *postgres.DB, _ *pgxpool.Pool) func() error {
			cat := benchCategory(b, db)
			return func() error { return db.CreatePet(ctx, &store.Pet{Name: "p", CategoryID: cat}, nil) }
		}},
		{"create/one-statement-each", func(b *testing.B, db *postgres.DB, pool *pgxpool.Pool) func() error {
			cat := benchCategory(b, db)
			return func() error { return postgres.CreatePetAlone(ctx, db, pool, &store.Pet{Name: "p", CategoryID: cat}) }
		}},
		{"check-key/rounds", func(b *testing.B, db *postgres.DB, _ *pgxpool.Pool) func() error {
			secret := benchKey(b, db)
			return func() error {
				_, ok, err := db.CheckAPIKey(ctx, secret)
				if err == nil && !ok {
					err = errors.New("the key was not found")
				}
				return err
			}
		}},
		{"check-key/one-statement-each", func(b *testing.B, db *postgres.DB, pool *pgxpool.Pool) func() error {
			hash := sha256.Sum256([]byte(benchKey(b, db)))
			return func() error {
				var k store.APIKey
				var h []byte
				return pool.QueryRow(ctx, keySQL, hash[:]).Scan(&h, &k.ID, &k.Name, &k.Prefix, &k.CreatedAt)
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			url, err := cluster.NewDatabase(ctx)
			if err != nil {
				b.Fatal(err)
			}
			db := domaintest.OpenPostgres(b, url)
			cfg, err := pgxpool.ParseConfig(url)
			if err != nil {
				b.Fatal(err)
			}
			cfg.MaxConns = postgres.DefaultMaxConns
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(pool.Close)
			call := c.prepare(b, db, pool)
			callers := max(1, 64/runtime.GOMAXPROCS(0))
			// Connections open before the count starts, in both ways.
			var warm sync.WaitGroup
			for range 64 {
				warm.Go(func() {
					if err := call(); err != nil {
						b.Error(err)
					}
				})
			}
			warm.Wait()
			b.SetParallelism(callers)
			cpu0, cpuOK := domaintest.CPUTime(b)
			pg0, err := cluster.CPU()
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := call(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			pg1, err := cluster.CPU()
			if err != nil {
				b.Fatal(err)
			}
			n := float64(b.N)
			b.ReportMetric(float64(b.Elapsed().Microseconds())/n, "µs/op")
			b.ReportMetric(float64((pg1-pg0).Microseconds())/n, "pg-cpu-µs/op")
			if cpu, _ := domaintest.CPUTime(b); cpuOK {
				b.ReportMetric(float64((cpu-cpu0).Microseconds())/n, "cpu-µs/op")
			}
		})
	}
}

func benchCategory(b *testing.B, db *postgres.DB) int64 {
	c := store.Category{Name: "dogs"}
	if err := db.CreateCategory(context.Background(), &c, nil); err != nil {
		b.Fatal(err)
	}
	return c.ID
}

func benchKey(b *testing.B, db *postgres.DB) string {
	_, secret, err := db.CreateAPIKey(context.Background(), "bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	return secret
}
