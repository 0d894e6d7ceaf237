package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"petstore/store"
	"petstore/store/storetest"
)

// TestEventsOfAnotherDatabase imports a stream such as a file that came
// back from another database gives: its own event, then events that
// database numbered, numbered again by the file, with the ids they had
// there (Was). A cursor of that database resumes where it would have
// there (on an event, between two, before them all; one past them all,
// or this database's own, stays as it is); a delivery of such an event is
// claimed under the id it had; and the stream gives the ids back.
func TestEventsOfAnotherDatabase(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	event := func(seq uint64, was store.EventID, name string) store.StoredEvent {
		return store.StoredEvent{Event: store.Event{ID: store.EventID{Seq: seq}, Type: store.EventCategoryCreated,
			CreatedAt: at, Data: json.RawMessage(fmt.Sprintf(`{"name":%q}`, name))}, Was: was}
	}
	from := &storetest.Snapshot{
		Webhooks: []store.Webhook{{ID: 1, URL: "http://127.0.0.1:9/hook", Events: []string{"*"}, Enabled: true, CreatedAt: at, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}},
		Events: []store.StoredEvent{
			event(1, store.EventID{}, "file 1"),
			event(10, store.EventID{Tx: 100, Seq: 10}, "pg a"), event(11, store.EventID{Tx: 100, Seq: 11}, "pg b"), event(12, store.EventID{Tx: 105, Seq: 9}, "pg c"),
		},
		Deliveries: []store.Delivery{{ID: 4, WebhookID: 1, EventID: store.EventID{Seq: 12}, EventType: store.EventCategoryCreated,
			Attempt: 1, State: store.DeliveryPending, ScheduledAt: at}},
		Rest: store.Rest{Dispatched: store.EventID{Seq: 12}, LastIDs: store.LastIDs{Events: 12, Webhooks: 1, Deliveries: 4}},
	}
	db := open(t)
	if err := db.Import(ctx, from); err != nil {
		t.Fatal(err)
	}
	own, err := db.RecordEvent(ctx, store.PendingEvent{Type: store.EventCategoryCreated, Data: json.RawMessage(`{"name":"own"}`)}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := func(after store.EventID) string {
		t.Helper()
		es, err := db.Events(ctx, store.EventFilter{After: after, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			var d struct{ Name string }
			_ = json.Unmarshal(e.Data, &d)
			out = append(out, d.Name)
		}
		return strings.Join(out, ", ")
	}
	for _, c := range []struct {
		cursor store.EventID
		want   string
	}{
		{store.EventID{Tx: 100, Seq: 11}, "pg c, own"},
		{store.EventID{Tx: 103, Seq: 1}, "pg c, own"}, // between two
		{store.EventID{Tx: 105, Seq: 9}, "own"},
		{store.EventID{Tx: 50, Seq: 1}, "pg a, pg b, pg c, own"}, // before them all
		{store.EventID{Seq: 1}, "pg a, pg b, pg c, own"},
		{own.ID, ""},
	} {
		mapped, err := db.EventCursor(ctx, c.cursor)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(mapped); got != c.want {
			t.Errorf("after %s (%s here): %s\nwant %s", c.cursor, mapped, got, c.want)
		}
	}
	if past, err := db.EventCursor(ctx, store.EventID{Tx: 1 << 40, Seq: 1}); err != nil || past != (store.EventID{Tx: 1 << 40, Seq: 1}) {
		t.Errorf("a cursor past every event taken: %s, %v; want it as it is", past, err)
	}

	claimed, err := db.ClaimDeliveries(ctx, time.Now(), time.Hour, nil, 10)
	if err != nil || len(claimed) != 1 || claimed[0].ID != 4 || claimed[0].EventID != (store.EventID{Seq: 12}) || claimed[0].Event.ID != (store.EventID{Tx: 105, Seq: 9}) {
		t.Errorf("the pending delivery: %+v, %v; want delivery 4 of event 12, sent as %s", claimed, err, store.EventID{Tx: 105, Seq: 9})
	}

	got, err := storetest.Collect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range from.Events {
		if i >= len(got.Events) || got.Events[i].ID != e.ID || got.Events[i].Was != e.Was {
			t.Errorf("event %d streamed: %+v, want id %s was %s", i, got.Events, e.ID, e.Was)
			break
		}
	}
}
