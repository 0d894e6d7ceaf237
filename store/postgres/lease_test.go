package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/postgres/pgtest"
)

// Instances on one database whose clocks differ: one whose clock runs an
// hour ahead does not take the delivery another leased a moment ago, nor
// count it due, and takes it once it is free. A lease compared with the
// claimer's clock let both send it at once.
func TestLeaseHoldsAgainstAClockAhead(t *testing.T) {
	ctx := context.Background()
	a, b, _ := twoInstances(t, pgtest.URL(t))
	w := store.Webhook{URL: "http://a.example/", Events: []string{"*"}, Enabled: true, Secret: "whsec_x"}
	if err := a.CreateWebhook(ctx, &w, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateCategory(ctx, &store.Category{Name: "cats"}, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	domaintest.WaitFor(t, time.Minute, 10*time.Millisecond, func() error {
		if n, err := a.FanOut(ctx, now, 100); err != nil || n == 0 {
			return errors.Join(err, errors.New("the event is not fanned out"))
		}
		return nil
	})
	claimed, err := a.ClaimDeliveries(ctx, now, time.Minute, nil, 10)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("the first instance's claim: %d deliveries, %v; want 1", len(claimed), err)
	}

	ahead := now.Add(time.Hour)
	if q, err := b.WebhookQueue(ctx, ahead); err != nil || q.Due != 0 || q.Pending != 1 {
		t.Errorf("the queue an hour ahead: %+v, %v; want the leased delivery pending, not due", q, err)
	}
	if got, err := b.ClaimDeliveries(ctx, ahead, time.Minute, nil, 10); err != nil || len(got) != 0 {
		t.Errorf("an instance an hour ahead claimed %d deliveries (%v) leased a moment ago for a minute; want none", len(got), err)
	}

	// Its retry, due at once and leased by no one, is the other's to take.
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check(a.FinishDeliveries(ctx, []store.Finished{{Claimed: &claimed[0], Outcome: store.Outcome{AttemptedAt: now, Status: 500, Error: "HTTP 500", Next: &now}}}))
	if got, err := b.ClaimDeliveries(ctx, ahead, time.Minute, nil, 10); err != nil || len(got) != 1 || got[0].Attempt != 2 {
		t.Errorf("the retry, claimed by the instance ahead: %+v, %v; want attempt 2", got, err)
	}
}
