package store_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"petstore/store"
)

// event is an event's type and data, as a test expects them.
type event struct {
	Type string
	Data string
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	check(t, err)
	return string(b)
}

// eventsAfter returns the events after the cursor, and the new cursor.
func eventsAfter(t *testing.T, s store.Store, after store.EventID, kinds ...string) ([]event, store.EventID) {
	t.Helper()
	var out []event
	for {
		es := must(s.Events(ctx, store.EventFilter{After: after, Kinds: kinds, Limit: 3}))(t)
		if len(es) == 0 {
			return out, after
		}
		for _, e := range es {
			if !after.Less(e.ID) {
				t.Fatalf("event %s after cursor %s: out of order", e.ID, after)
			}
			after = e.ID
			out = append(out, event{e.Type, string(e.Data)})
		}
	}
}

// testEvents: every change records its event, with the resource as the API
// answers it, in order; refused writes record none.
func testEvents(t *testing.T, s store.Store) {
	c := newCategory(t, s, "dogs")
	c.Description = "good"
	check(t, s.ReplaceCategory(ctx, &c, store.Condition{}))
	p := newPet(t, s, "Rex", c.ID, store.StatusAvailable)
	if err := s.CreatePet(ctx, &store.Pet{Name: "x", CategoryID: 999}, nil); err == nil {
		t.Fatal("a pet in a missing category was created")
	}
	stock := must(s.SetStock(ctx, p.ID, 5, store.Condition{}))(t)
	o := store.Order{PetID: p.ID, Quantity: 2}
	check(t, s.PlaceOrder(ctx, &o, nil))
	ship := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	shipped := must(s.UpdateOrder(ctx, o.ID, store.OrderUpdate{ShipDate: &ship}, store.Condition{}))(t)
	done := true
	completed := must(s.UpdateOrder(ctx, o.ID, store.OrderUpdate{Complete: &done}, store.Condition{}))(t)
	o2 := store.Order{PetID: p.ID, Quantity: 1}
	check(t, s.PlaceOrder(ctx, &o2, nil))
	check(t, s.CancelOrder(ctx, o2.ID, store.Condition{}))
	p.Status = store.StatusSold
	check(t, s.ReplacePet(ctx, &p, store.Condition{}))
	check(t, s.DeletePet(ctx, p.ID, store.Condition{}))
	key, _ := must2(s.CreateAPIKey(ctx, "ci", nil))(t)
	check(t, s.RevokeAPIKey(ctx, key.ID))

	afterPlace := stock
	afterPlace.Quantity = 3
	afterOne := afterPlace
	afterOne.Quantity = 2
	want := []event{
		{store.EventCategoryCreated, `{"id":1,"name":"dogs","description":"all the dogs"}`},
		{store.EventCategoryUpdated, jsonOf(t, c)},
		{store.EventPetCreated, `{"id":1,"name":"Rex","categoryId":1,"status":"available"}`},
		{store.EventInventory, jsonOf(t, stock)},
		{store.EventInventory, jsonOf(t, afterPlace)},
		{store.EventOrderPlaced, jsonOf(t, o)},
		{store.EventOrderUpdated, jsonOf(t, shipped)},
		{store.EventOrderCompleted, jsonOf(t, completed)},
		{store.EventInventory, jsonOf(t, afterOne)},
		{store.EventOrderPlaced, jsonOf(t, o2)},
		{store.EventInventory, jsonOf(t, afterPlace)},
		{store.EventOrderCancelled, `{"id":2}`},
		{store.EventPetUpdated, jsonOf(t, p)},
		{store.EventPetDeleted, `{"id":1}`},
		{store.EventAPIKeyCreated, jsonOf(t, key)},
		{store.EventAPIKeyRevoked, jsonOf(t, map[string]int64{"id": key.ID})},
	}
	got, last := eventsAfter(t, s, store.EventID{})
	if !slices.Equal(got, want) {
		t.Errorf("events:\n got %v\nwant %v", got, want)
	}
	if newest := must(s.NewestEvent(ctx))(t); newest != last {
		t.Errorf("NewestEvent = %s, want the last event listed, %s", newest, last)
	}
	public, _ := eventsAfter(t, s, store.EventID{}, store.PublicEventKinds...)
	if len(public) != len(want)-2 {
		t.Errorf("public events: got %d, want %d", len(public), len(want)-2)
	}
	oldest := must(s.OldestEvent(ctx))(t)
	if oldest.IsZero() {
		t.Error("no oldest event")
	}
	id, err := store.ParseEventID(oldest.String())
	if err != nil || id != oldest {
		t.Errorf("ParseEventID(%s) = %v, %v", oldest, id, err)
	}
}

// claimTwoEvents records two events, fans them out, and claims their
// deliveries to the hooks webhooks that take every event.
func claimTwoEvents(t *testing.T, s store.Store, now time.Time, hooks int) []store.Claimed {
	t.Helper()
	c := newCategory(t, s, "cats")
	newPet(t, s, "Tom", c.ID, store.StatusAvailable)
	fanOut(t, s, now, 2)
	claimed := must(s.ClaimDeliveries(ctx, now, time.Minute, nil, 100))(t)
	if len(claimed) != 2*hooks {
		t.Fatalf("claimed %d deliveries, want %d (2 events, %d webhooks)", len(claimed), 2*hooks, hooks)
	}
	return claimed
}

// fanOut fans out until want events have been read, and fails if more
// were. On PostgreSQL an event is read only once every older transaction
// has ended, which other tests on the shared cluster may hold back.
func fanOut(t *testing.T, s store.Store, now time.Time, want int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	got := 0
	for got < want {
		n := must(s.FanOut(ctx, now, 100))(t)
		got += n
		if n > 0 {
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("FanOut read %d events in a minute, want %d", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got != want {
		t.Fatalf("FanOut read %d events, want %d", got, want)
	}
}

// testDeliveries: fan-out, claims, leases, outcomes and retries.
func testDeliveries(t *testing.T, s store.Store) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	all := newWebhook(t, s, "http://a.example/", "whsec_x")
	pets := store.Webhook{URL: "http://b.example/", Events: []string{store.EventPetCreated}, Enabled: true, Secret: "whsec_y"}
	check(t, s.CreateWebhook(ctx, &pets, nil))
	newWebhook(t, s, "http://c.example/", "") // disabled

	c := newCategory(t, s, "cats")
	newPet(t, s, "Tom", c.ID, store.StatusAvailable)
	fanOut(t, s, now, 2)
	if n := must(s.FanOut(ctx, now, 100))(t); n != 0 {
		t.Fatalf("a second FanOut read %d events, want 0", n)
	}
	claimed := must(s.ClaimDeliveries(ctx, now, time.Minute, nil, 10))(t)
	if len(claimed) != 3 {
		t.Fatalf("claimed %d deliveries, want 3 (two for *, one for pet.created)", len(claimed))
	}
	// The lease is the store's to time: a claimer's clock an hour ahead
	// does not end it.
	if again := must(s.ClaimDeliveries(ctx, now.Add(time.Hour), time.Minute, nil, 10))(t); len(again) != 0 {
		t.Fatalf("leased deliveries claimed again, by a clock an hour ahead: %d", len(again))
	}
	for _, d := range claimed {
		if d.Webhook.Secret == "" || len(d.Event.Data) == 0 || d.Event.ID != d.EventID {
			t.Errorf("claimed delivery lacks its webhook or event: %+v", d)
		}
	}
	// The first fails and is retried later; the others succeed.
	next := now.Add(5 * time.Second)
	check(t, s.FinishDeliveries(ctx, []store.Finished{{Claimed: &claimed[0], Outcome: store.Outcome{AttemptedAt: now, Status: 500, Error: "HTTP 500", Next: &next}}}))
	for i := range claimed[1:] {
		check(t, s.FinishDeliveries(ctx, []store.Finished{{Claimed: &claimed[1+i], Outcome: store.Outcome{AttemptedAt: now, Status: 200, Succeeded: true}}}))
	}
	if due := must(s.ClaimDeliveries(ctx, now, time.Minute, nil, 10))(t); len(due) != 0 {
		t.Fatalf("a retry was due before its time: %d", len(due))
	}
	// Its lease ends at once: only busy keeps it from the next claim.
	due := must(s.ClaimDeliveries(ctx, next, 0, nil, 10))(t)
	if len(due) != 1 || due[0].Attempt != 2 || due[0].EventID != claimed[0].EventID {
		t.Fatalf("the retry: %+v", due)
	}
	if busy := must(s.ClaimDeliveries(ctx, next, time.Minute, slices.Repeat([]int64{due[0].WebhookID}, store.MaxInFlightPerWebhook), 10))(t); len(busy) != 0 {
		t.Fatalf("a busy webhook's delivery was claimed")
	}
	// One slot free: its one due delivery is claimed.
	if again := must(s.ClaimDeliveries(ctx, next, time.Minute, slices.Repeat([]int64{due[0].WebhookID}, store.MaxInFlightPerWebhook-1), 10))(t); len(again) != 1 || again[0].ID != due[0].ID {
		t.Fatalf("the retry, its lease ended, claimed again with one slot free: %+v", again)
	}
	check(t, s.FinishDeliveries(ctx, []store.Finished{{Claimed: &due[0], Outcome: store.Outcome{AttemptedAt: next, Status: 404, Disable: "failing for 5 days"}}}))
	w := must(s.Webhook(ctx, due[0].WebhookID))(t)
	if w.Enabled || w.DisabledReason == "" || w.FailingSince == nil {
		t.Errorf("webhook after a disabling outcome: %+v", w)
	}
	list, _ := must2(s.Deliveries(ctx, due[0].WebhookID, store.Page{}))(t)
	if len(list) < 2 || list[0].ID < list[1].ID {
		t.Fatalf("deliveries not newest first: %+v", list)
	}
	if list[0].State != store.DeliveryFailed || list[0].Status != 404 {
		t.Errorf("newest delivery: %+v", list[0])
	}
	retry := must(s.RetryDelivery(ctx, due[0].WebhookID, list[0].ID, next, nil))(t)
	if retry.State != store.DeliveryPending || !retry.Manual {
		t.Errorf("retry: %+v", retry)
	}
	_, err := s.RetryDelivery(ctx, pets.ID, list[0].ID, next, nil)
	wantError(t, "retry under another webhook", err, store.ENOTFOUND, fmt.Sprintf("delivery %d not found", list[0].ID))
	// webhook.disabled went into the outbox, for the others.
	evs, _ := eventsAfter(t, s, store.EventID{}, "webhook")
	if len(evs) != 1 || evs[0].Type != store.EventWebhookDisabled {
		t.Errorf("admin events: %v", evs)
	}
	test := must(s.RecordEvent(ctx, store.PendingEvent{Type: store.EventWebhookTest, Data: json.RawMessage(`{}`)}, pets.ID, nil))(t)
	fanOut(t, s, next, 2)
	got := must(s.ClaimDeliveries(ctx, next, time.Minute, nil, 10))(t)
	var tests int
	for _, d := range got {
		if d.EventID == test.ID {
			tests++
			if d.WebhookID != pets.ID {
				t.Errorf("webhook.test went to webhook %d", d.WebhookID)
			}
		}
	}
	if tests != 1 {
		t.Errorf("webhook.test deliveries: %d, want 1", tests)
	}
	check(t, s.DeleteWebhook(ctx, all.ID))
	_, err = s.Webhook(ctx, all.ID)
	wantError(t, "deleted webhook", err, store.ENOTFOUND, fmt.Sprintf("webhook %d not found", all.ID))
	// Pruning drops what is older than the cut.
	if n := must(s.PruneEvents(ctx, time.Now().Add(time.Hour)))(t); n == 0 {
		t.Error("PruneEvents pruned nothing")
	}
	if oldest := must(s.OldestEvent(ctx))(t); !oldest.IsZero() {
		t.Errorf("events left after pruning: %s", oldest)
	}
	if newest := must(s.NewestEvent(ctx))(t); !newest.IsZero() {
		t.Errorf("NewestEvent after pruning every event: %s, want none", newest)
	}
}

// testDeliveryClaimRace: instances that claim at the same moment never get
// the same delivery. A claim that waited for another's lock must see the
// lease the other set, not the row as it was when its statement began.
func testDeliveryClaimRace(t *testing.T, s store.Store) {
	const hooks, claimers = 12, 6
	for i := range hooks {
		newWebhook(t, s, fmt.Sprintf("http://h%d.example/", i), "whsec_x")
	}
	c := newCategory(t, s, "cats")
	for i := range 4 {
		newPet(t, s, fmt.Sprintf("p%d", i), c.ID, store.StatusAvailable)
	}
	now := time.Now().UTC()
	fanOut(t, s, now, 5)
	const want = hooks * 5 // category.created and 4 pet.created, to each
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range claimers {
		wg.Go(func() {
			<-start
			for empty := 0; empty < 3; {
				got, err := s.ClaimDeliveries(ctx, now, time.Hour, nil, 3)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					empty++
				}
				mu.Lock()
				for _, d := range got {
					seen[d.ID]++
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	for id, n := range seen {
		if n > 1 {
			t.Errorf("delivery %d claimed %d times", id, n)
		}
	}
	if len(seen) != want {
		t.Errorf("%d deliveries claimed, want %d", len(seen), want)
	}
}

// testFinishDeliveriesInOneBatch: many outcomes of several webhooks
// recorded by one call, a webhook disabled by two (one webhook.disabled),
// one of a deleted webhook and one already finished skipped, are recorded
// as if each was alone.
func testFinishDeliveriesInOneBatch(t *testing.T, s store.Store) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	hooks := make([]store.Webhook, 3)
	for i := range hooks {
		hooks[i] = newWebhook(t, s, fmt.Sprintf("http://h%d.example/", i), "whsec_x")
	}
	claimed := claimTwoEvents(t, s, now, len(hooks))
	of := map[int64][]*store.Claimed{}
	for i := range claimed {
		of[claimed[i].WebhookID] = append(of[claimed[i].WebhookID], &claimed[i])
	}
	ok, failing, gone := of[hooks[0].ID], of[hooks[1].ID], of[hooks[2].ID]
	check(t, s.DeleteWebhook(ctx, hooks[2].ID))
	next := now.Add(5 * time.Second)
	batch := []store.Finished{
		{Claimed: ok[0], Outcome: store.Outcome{AttemptedAt: now, Status: 204, Succeeded: true}},
		{Claimed: failing[0], Outcome: store.Outcome{AttemptedAt: now, Status: 500, Error: "HTTP 500", Disable: "failing"}},
		{Claimed: gone[0], Outcome: store.Outcome{AttemptedAt: now, Status: 204, Succeeded: true}},
		{Claimed: ok[1], Outcome: store.Outcome{AttemptedAt: now, Status: 500, Error: "HTTP 500", Next: &next}},
		{Claimed: failing[1], Outcome: store.Outcome{AttemptedAt: now, Status: 500, Error: "HTTP 500", Disable: "failing"}},
		{Claimed: ok[0], Outcome: store.Outcome{AttemptedAt: now, Status: 500, Error: "recorded twice"}},
	}
	check(t, s.FinishDeliveries(ctx, batch))
	list, _ := must2(s.Deliveries(ctx, hooks[0].ID, store.Page{}))(t)
	states := map[int64]store.Delivery{}
	for _, d := range list {
		states[d.ID] = d
	}
	if d := states[ok[0].ID]; d.State != store.DeliverySucceeded || d.Status != 204 {
		t.Errorf("the success, recorded in a batch (a second outcome of it ignored): %+v", d)
	}
	if d := states[ok[1].ID]; d.State != store.DeliveryFailed || d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(next) {
		t.Errorf("the failure, recorded in a batch: %+v", d)
	}
	if len(list) != 3 || list[0].State != store.DeliveryPending || list[0].Attempt != 2 {
		t.Errorf("the retry of the failure: %+v", list)
	}
	if w := must(s.Webhook(ctx, hooks[0].ID))(t); !w.Enabled || w.FailingSince == nil {
		t.Errorf("a webhook whose last outcome in the batch failed: %+v", w)
	}
	if w := must(s.Webhook(ctx, hooks[1].ID))(t); w.Enabled || w.DisabledReason != "failing" {
		t.Errorf("a webhook disabled in the batch: %+v", w)
	}
	evs, _ := eventsAfter(t, s, store.EventID{}, "webhook")
	if len(evs) != 1 || evs[0].Type != store.EventWebhookDisabled {
		t.Errorf("admin events after the batch: %v, want one webhook.disabled", evs)
	}
	// Nothing is leased any more: the failure's retry is claimed when due.
	if due := must(s.ClaimDeliveries(ctx, next, time.Minute, nil, 100))(t); len(due) != 1 || due[0].Attempt != 2 {
		t.Errorf("due after the batch: %+v", due)
	}
}
