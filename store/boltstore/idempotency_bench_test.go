package boltstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store"
)

// BenchmarkKeyedCreate is durable creates from 32 writers at once (group
// commits, as under load), without an Idempotency-Key, with one kept as it
// is (the public API's), and with one kept sealed under a hash of the key
// (the admin API's). It reports the process's CPU per create: the figure
// that decided which answers are sealed (docs/performance.md).
func BenchmarkKeyedCreate(b *testing.B) {
	for _, mode := range []string{"none", "clear", "sealed"} {
		b.Run("key="+mode, func(b *testing.B) {
			db := domaintest.OpenStore(b)
			cat := store.Category{Name: "dogs"}
			if err := db.CreateCategory(context.Background(), &cat, nil); err != nil {
				b.Fatal(err)
			}
			fp := make([]byte, 32)
			var n atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			cpu0, _ := domaintest.CPUTime(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					var key *store.IdempotentWrite
					if mode != "none" {
						// Keys as the load benchmark sends them: a run id and a counter.
						key = &store.IdempotentWrite{
							Scope: "key:0123456789abcdef01234567", Key: fmt.Sprintf("lt1764201234-%d", n.Add(1)),
							Fingerprint: fp, TTL: 24 * time.Hour, Sealed: mode == "sealed", Credential: "pat_bench-admin-token-of-32-characters",
						}
					}
					p := store.Pet{Name: "Rex", CategoryID: cat.ID, Status: store.StatusAvailable}
					if err := db.CreatePet(context.Background(), &p, key); err != nil {
						b.Fatal(err)
					}
				}
			})
			cpu1, _ := domaintest.CPUTime(b)
			b.ReportMetric(float64(cpu1-cpu0)/float64(b.N)/1e3, "cpu-µs/op")
		})
	}
}
