package store_test

import (
	"testing"
	"time"

	"petstore/store"
)

// testManualRetryEndsSchedule: an operator's retry that fails leaves the
// event's scheduled attempt pending; one that succeeds deletes it, and
// only it (not another event's, nor another webhook's of the same event).
func testManualRetryEndsSchedule(t *testing.T, s store.Store) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	a := newWebhook(t, s, "http://a.example/", "whsec_x")
	b := newWebhook(t, s, "http://b.example/", "whsec_y")
	claimed := claimTwoEvents(t, s, now, 2)
	// Every first attempt fails; the schedule's next is due later.
	next := now.Add(time.Hour)
	var done []store.Finished
	for i := range claimed {
		done = append(done, store.Finished{Claimed: &claimed[i], Outcome: store.Outcome{AttemptedAt: now, Status: 500, Error: "HTTP 500", Next: &next}})
	}
	check(t, s.FinishDeliveries(ctx, done))
	var first *store.Claimed // a's delivery of the category's event
	for i := range claimed {
		if claimed[i].WebhookID == a.ID && claimed[i].Event.Type == store.EventCategoryCreated {
			first = &claimed[i]
		}
	}
	if first == nil {
		t.Fatalf("no delivery of category.created to webhook a among %+v", claimed)
	}

	manual := func(succeeded bool) {
		t.Helper()
		r := must(s.RetryDelivery(ctx, a.ID, first.ID, now, nil))(t)
		got := must(s.ClaimDeliveries(ctx, now, time.Minute, nil, 10))(t)
		if len(got) != 1 || got[0].ID != r.ID || !got[0].Manual {
			t.Fatalf("claimed %+v, want the manual retry %d alone", got, r.ID)
		}
		o := store.Outcome{AttemptedAt: now, Status: 500, Error: "HTTP 500"}
		if succeeded {
			o = store.Outcome{AttemptedAt: now, Status: 204, Succeeded: true}
		}
		check(t, s.FinishDeliveries(ctx, []store.Finished{{Claimed: &got[0], Outcome: o}}))
	}
	// pending lists the pending deliveries of webhook w.
	pending := func(w int64) []store.Delivery {
		list, _ := must2(s.Deliveries(ctx, w, store.Page{Limit: 100}))(t)
		var out []store.Delivery
		for _, d := range list {
			if d.State == store.DeliveryPending {
				out = append(out, d)
			}
		}
		return out
	}

	manual(false)
	if p := pending(a.ID); len(p) != 2 {
		t.Fatalf("after a manual retry that failed, webhook a has %d pending deliveries, want both scheduled: %+v", len(p), p)
	}
	manual(true)
	p := pending(a.ID)
	if len(p) != 1 || p[0].EventID == first.EventID || p[0].Attempt != 2 {
		t.Errorf("after a manual retry that succeeded, webhook a's pending deliveries are %+v, want only the other event's attempt 2", p)
	}
	if p := pending(b.ID); len(p) != 2 {
		t.Errorf("webhook b has %d pending deliveries, want its 2 untouched: %+v", len(p), p)
	}
	due := must(s.ClaimDeliveries(ctx, next, time.Minute, nil, 10))(t)
	if len(due) != 3 {
		t.Errorf("at the schedule's next time, %d deliveries are due, want 3: %+v", len(due), due)
	}
	for _, d := range due {
		if d.WebhookID == a.ID && d.EventID == first.EventID {
			t.Errorf("the event delivered by the manual retry is due again: %+v", d.Delivery)
		}
	}
}
