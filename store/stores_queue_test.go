package store_test

import (
	"testing"
	"time"

	"petstore/store"
)

// testWebhookQueue: the queue /metrics reports follows the deliveries
// through fan-out, attempts under way, a failure with its retry waiting,
// and the retry's time, and counts the webhooks by health.
func testWebhookQueue(t *testing.T, s store.Store) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	queue := func(at time.Time) store.WebhookQueue {
		t.Helper()
		return must(s.WebhookQueue(ctx, at))(t)
	}
	if q := queue(now); q != (store.WebhookQueue{}) {
		t.Errorf("the queue of an empty store: %+v", q)
	}
	newWebhook(t, s, "http://a.example/", "whsec_x")
	newWebhook(t, s, "http://c.example/", "") // disabled
	c := newCategory(t, s, "cats")
	newPet(t, s, "Tom", c.ID, store.StatusAvailable)
	evs := must(s.Events(ctx, store.EventFilter{}))(t)
	if len(evs) != 2 {
		t.Fatalf("events: %d, want 2", len(evs))
	}
	want := store.WebhookQueue{Healthy: 1, Disabled: 1, EventsRecorded: 2}
	if q := queue(now); q != want {
		t.Errorf("before the fan-out: %+v, want %+v", q, want)
	}

	fanOut(t, s, now, 2)
	want.Pending, want.Due, want.OldestDue, want.OldestPendingEvent = 2, 2, now, evs[0].CreatedAt
	if q := queue(now.Add(time.Second)); !sameQueue(q, want) {
		t.Errorf("after the fan-out: %+v, want %+v", q, want)
	}

	// The other event's delivery succeeds, then the first event's fails,
	// its retry due later: the webhook is failing.
	claimed := must(s.ClaimDeliveries(ctx, now, time.Minute, nil, 10))(t)
	if len(claimed) != 2 {
		t.Fatalf("claimed %d deliveries, want 2", len(claimed))
	}
	// Taken by attempts, they are pending but no longer due.
	want.Due, want.OldestDue = 0, time.Time{}
	if q := queue(now.Add(time.Second)); !sameQueue(q, want) {
		t.Errorf("with both deliveries' attempts under way: %+v, want %+v", q, want)
	}
	next := now.Add(5 * time.Second)
	var done []store.Finished
	for i := range claimed {
		if claimed[i].EventID != evs[0].ID {
			done = append(done, store.Finished{Claimed: &claimed[i], Outcome: store.Outcome{AttemptedAt: now, Status: 200, Succeeded: true}})
		}
	}
	for i := range claimed {
		if claimed[i].EventID == evs[0].ID {
			done = append(done, store.Finished{Claimed: &claimed[i], Outcome: store.Outcome{AttemptedAt: now, Status: 500, Error: "HTTP 500", Next: &next}})
		}
	}
	check(t, s.FinishDeliveries(ctx, done))
	want = store.WebhookQueue{Pending: 1, OldestPendingEvent: evs[0].CreatedAt, Failing: 1, Disabled: 1, EventsRecorded: 2}
	if q := queue(now.Add(time.Second)); !sameQueue(q, want) {
		t.Errorf("with a retry waiting: %+v, want %+v", q, want)
	}
	want.Due, want.OldestDue = 1, next
	if q := queue(next.Add(time.Minute)); !sameQueue(q, want) {
		t.Errorf("with the retry due: %+v, want %+v", q, want)
	}
}

// sameQueue compares queues, their times as instants.
func sameQueue(a, b store.WebhookQueue) bool {
	if !a.OldestDue.Equal(b.OldestDue) || !a.OldestPendingEvent.Equal(b.OldestPendingEvent) {
		return false
	}
	a.OldestDue, a.OldestPendingEvent, b.OldestDue, b.OldestPendingEvent = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return a == b
}

// testQueueLeavesOutAFullWebhook: a webhook with every attempt slot taken
// (a receiver that hangs) holds its other due deliveries back for its own
// receiver: they do not make the queue look stuck. Another webhook's due
// delivery does, and so does the full one's once its leases run out.
func testQueueLeavesOutAFullWebhook(t *testing.T, s store.Store) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	hung := newWebhook(t, s, "http://hung.example/", "whsec_x")
	c := newCategory(t, s, "cats")
	for range store.MaxInFlightPerWebhook {
		newPet(t, s, "Tom", c.ID, store.StatusAvailable)
	}
	fanOut(t, s, now, store.MaxInFlightPerWebhook+1)
	claim := func(lease time.Duration) {
		t.Helper()
		if claimed := must(s.ClaimDeliveries(ctx, now, lease, nil, store.MaxInFlightPerWebhook))(t); len(claimed) != store.MaxInFlightPerWebhook {
			t.Fatalf("claimed %d deliveries, want %d", len(claimed), store.MaxInFlightPerWebhook)
		}
	}
	// Leases that end at once: leases run out on the store's clock, which
	// a test cannot move.
	claim(0)
	if q := must(s.WebhookQueue(ctx, now.Add(time.Second)))(t); q.Due != int64(store.MaxInFlightPerWebhook)+1 || !q.OldestDue.Equal(now) {
		t.Errorf("the leases of webhook %d ran out: due %d, oldest due %v; want %d and %v", hung.ID, q.Due, q.OldestDue, store.MaxInFlightPerWebhook+1, now)
	}
	claim(time.Minute) // the same deliveries, free again
	if q := must(s.WebhookQueue(ctx, now.Add(time.Second)))(t); q.Due != 1 || !q.OldestDue.IsZero() {
		t.Errorf("with %d attempts of one webhook under way and one more due: due %d, oldest due %v; want 1 and none (waiting for its own receiver)", store.MaxInFlightPerWebhook, q.Due, q.OldestDue)
	}

	later := now.Add(2 * time.Second)
	newWebhook(t, s, "http://live.example/", "whsec_y")
	newPet(t, s, "Felix", c.ID, store.StatusAvailable)
	fanOut(t, s, later, 1)
	// And an hour on, the leases hold: the queue does not time them by now.
	if q := must(s.WebhookQueue(ctx, later.Add(time.Hour)))(t); q.Due != 3 || !q.OldestDue.Equal(later) {
		t.Errorf("with another webhook's delivery due: due %d, oldest due %v; want 3 and %v", q.Due, q.OldestDue, later)
	}
}
