package events_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/events"
	"petstore/store"
)

// claimWatch is a real store that notes, per claim, how many of one
// webhook's deliveries it leased, and which claims began after a fan-out
// that found events.
type claimWatch struct {
	store.Store
	webhook int64
	mu      sync.Mutex
	watch   bool // set by the test: note claims from the next fan-out on
	fanned  bool
	after   int // claims that began after that fan-out
	leased  int // the webhook's deliveries those claims leased
}

func (c *claimWatch) FanOut(ctx context.Context, now time.Time, limit int) (int, error) {
	n, err := c.Store.FanOut(ctx, now, limit)
	c.mu.Lock()
	c.fanned = c.fanned || c.watch && n > 0
	c.mu.Unlock()
	return n, err
}

func (c *claimWatch) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, busy []int64, limit int) ([]store.Claimed, error) {
	c.mu.Lock()
	counted := c.fanned
	c.mu.Unlock()
	got, err := c.Store.ClaimDeliveries(ctx, now, lease, busy, limit)
	if counted {
		c.mu.Lock()
		c.after++
		for _, d := range got {
			if d.WebhookID == c.webhook {
				c.leased++
			}
		}
		c.mu.Unlock()
	}
	return got, err
}

// A webhook whose receiver is still answering some of its attempts gets
// only as many more as it has free slots. Claims once took a whole share
// beside the attempts in flight; its Transport opens no more connections
// than the slots, so the extra attempts waited for one while their
// deadline ran, and a Node receiver answering each request in 2 to 9 s saw
// many given up as "no answer within 10s" and sent again.
func TestNoAttemptsQueueBehindASlowReceiver(t *testing.T) {
	db := domaintest.OpenStore(t)
	arrived := make(chan struct{}, 4*store.MaxInFlightPerWebhook)
	release := make(chan struct{}, 4*store.MaxInFlightPerWebhook)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // before srv.Close: no handler stays held
	w := hook(t, db, srv.URL, store.EventCategoryCreated)
	c := &claimWatch{Store: db, webhook: w.ID}
	start(t, c, time.Now, events.Policy{AllowPrivate: true})
	create := func(n int) {
		for range n {
			if err := db.CreateCategory(ctx, &store.Category{Name: fmt.Sprint("c", time.Now().UnixNano())}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	const slots = store.MaxInFlightPerWebhook
	create(slots)
	for range slots {
		<-arrived
	}
	// One attempt ends and is recorded: the others are still in flight.
	release <- struct{}{}
	domaintest.WaitFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		list, _, err := db.Deliveries(ctx, w.ID, store.Page{Limit: 100})
		done := 0
		for _, d := range list {
			if d.State == store.DeliverySucceeded {
				done++
			}
		}
		if err != nil || done != 1 {
			return fmt.Errorf("%d succeeded (%v), want 1", done, err)
		}
		return nil
	})
	c.mu.Lock()
	c.watch = true
	c.mu.Unlock()
	create(slots)
	domaintest.WaitFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.after == 0 {
			return fmt.Errorf("no claim yet after the new events were fanned out")
		}
		return nil
	})
	c.mu.Lock()
	leased := c.leased
	c.mu.Unlock()
	if leased > 1 {
		t.Errorf("%d more of the webhook's deliveries claimed while %d of its %d slots were taken: they wait for a connection with their deadline running", leased, slots-1, slots)
	}
	for range 2 * slots {
		release <- struct{}{}
	}
	domaintest.WaitFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		list, _, err := db.Deliveries(ctx, w.ID, store.Page{Limit: 100})
		if err != nil || len(list) != 2*slots {
			return fmt.Errorf("%d deliveries (%v), want %d", len(list), err, 2*slots)
		}
		for _, d := range list {
			if d.State != store.DeliverySucceeded {
				return fmt.Errorf("delivery %d: %s %s", d.ID, d.State, d.Error)
			}
		}
		return nil
	})
}
