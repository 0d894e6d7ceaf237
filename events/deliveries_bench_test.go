package events

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/boltstore"
)

// countingStore counts the engine's writes and claims.
type countingStore struct {
	*boltstore.DB
	fanOuts, claims, records atomic.Int64
}

func (c *countingStore) FanOut(ctx context.Context, now time.Time, limit int) (int, error) {
	n, err := c.DB.FanOut(ctx, now, limit)
	if n > 0 {
		c.fanOuts.Add(1)
	}
	return n, err
}

func (c *countingStore) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, busy []int64, limit int) ([]store.Claimed, error) {
	c.claims.Add(1)
	return c.DB.ClaimDeliveries(ctx, now, lease, busy, limit)
}

func (c *countingStore) FinishDeliveries(ctx context.Context, done []store.Finished) error {
	c.records.Add(1)
	return c.DB.FinishDeliveries(ctx, done)
}

// BenchmarkDeliveries creates pets from 16 goroutines on a bbolt store
// while an engine runs, as the load benchmark's webhook row and its twin
// do: "twin" with no webhook, "webhook" with one on every event to a lean
// receiver, waiting until each event has reached it. The difference of
// their cpu-us/op (the process's CPU per create, the receiver's included)
// is what the delivery costs.
func BenchmarkDeliveries(b *testing.B) {
	for _, withHook := range []bool{false, true} {
		name := "twin"
		if withHook {
			name = "webhook"
		}
		b.Run(name, func(b *testing.B) {
			s := domaintest.OpenStore(b)
			var got atomic.Int64
			arrived := make(chan struct{}, 1)
			url := leanReceiver(b, func() {
				got.Add(1)
				select {
				case arrived <- struct{}{}:
				default:
				}
			})
			if withHook {
				secret := NewSecret()
				w := store.Webhook{URL: url, Events: []string{"*"}, Enabled: true, Secret: secret}
				if err := s.CreateWebhook(context.Background(), &w, nil); err != nil {
					b.Fatal(err)
				}
			}
			c := store.Category{Name: "dogs"}
			if err := s.CreateCategory(context.Background(), &c, nil); err != nil {
				b.Fatal(err)
			}
			oldest, err := s.Events(context.Background(), store.EventFilter{Limit: 1 << 20})
			if err != nil {
				b.Fatal(err)
			}
			counted := &countingStore{DB: s}
			e := New(Config{Store: counted, Policy: Policy{AllowPrivate: true}, Retention: time.Hour})
			ctx, cancel := context.WithCancel(context.Background())
			ran := make(chan struct{})
			go func() { e.Run(ctx); close(ran) }()
			defer func() { cancel(); <-ran }()

			b.ReportAllocs()
			b.ResetTimer()
			start, _ := domaintest.CPUTime(b)
			const writers = 16
			var wg sync.WaitGroup
			for i := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := i; n < b.N; n += writers {
						p := store.Pet{Name: fmt.Sprintf("pet %d", n), CategoryID: c.ID}
						if err := s.CreatePet(context.Background(), &p, nil); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			if withHook {
				all, err := s.Events(context.Background(), store.EventFilter{Limit: 1 << 20})
				if err != nil {
					b.Fatal(err)
				}
				for want := int64(len(all) - len(oldest)); got.Load() < want; {
					<-arrived
				}
			}
			end, ok := domaintest.CPUTime(b)
			b.StopTimer()
			if ok {
				b.ReportMetric(float64((end-start).Microseconds())/float64(b.N), "cpu-us/op")
			}
			if withHook {
				n := float64(b.N)
				b.ReportMetric(float64(counted.fanOuts.Load())/n, "fan-out-writes/op")
				b.ReportMetric(float64(counted.claims.Load())/n, "claims/op")
				b.ReportMetric(float64(counted.records.Load())/n, "record-writes/op")
			}
		})
	}
}
