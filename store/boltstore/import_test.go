package boltstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/storetest"
)

func openEmpty(t *testing.T) *boltstore.DB {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "petstore.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestImportNumbersPostgreSQLEventsAgain imports a stream such as
// PostgreSQL gives: two events of the file it once came from (Tx 0), then
// events PostgreSQL numbered by (tx, seq), whose seqs are not in the order
// of their ids. The file numbers them again in their order, after its own
// and past PostgreSQL's seqs; a client's PostgreSQL cursor resumes where
// it would have there (on an event, between two, before them all); the
// fan-out goes on after the event it had reached; the pending delivery is
// claimed with its event; and a new event comes after them all.
func TestImportNumbersPostgreSQLEventsAgain(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	event := func(tx, seq uint64, name string) store.StoredEvent {
		return store.StoredEvent{Event: store.Event{ID: store.EventID{Tx: tx, Seq: seq}, Type: store.EventCategoryCreated,
			CreatedAt: at, Data: json.RawMessage(fmt.Sprintf(`{"name":%q}`, name))}}
	}
	from := &storetest.Snapshot{
		Webhooks: []store.Webhook{{ID: 1, URL: "http://127.0.0.1:9/hook", Events: []string{"*"}, Enabled: true, CreatedAt: at, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}},
		Events: []store.StoredEvent{
			event(0, 1, "file 1"), event(0, 2, "file 2"),
			event(100, 10, "pg a"), event(100, 11, "pg b"), event(105, 9, "pg c"), event(107, 12, "pg d"),
		},
		Deliveries: []store.Delivery{{ID: 4, WebhookID: 1, EventID: store.EventID{Tx: 105, Seq: 9}, EventType: store.EventCategoryCreated,
			Attempt: 1, State: store.DeliveryPending, ScheduledAt: at}},
		Rest: store.Rest{Dispatched: store.EventID{Tx: 105, Seq: 9}, LastIDs: store.LastIDs{Events: 12, Webhooks: 1, Deliveries: 4}},
	}
	db := openEmpty(t)
	if err := db.Import(ctx, from); err != nil {
		t.Fatal(err)
	}
	names := func(after store.EventID) string { t.Helper(); return eventNames(t, db, after) }
	if got, want := names(store.EventID{}), "1 file 1, 2 file 2, 10 pg a, 11 pg b, 12 pg c, 13 pg d"; got != want {
		t.Errorf("the events: %s\nwant %s", got, want)
	}
	wantAfterCursors(t, db, []cursorCase{
		{store.EventID{Tx: 100, Seq: 11}, "12 pg c, 13 pg d"},
		{store.EventID{Tx: 103, Seq: 1}, "12 pg c, 13 pg d"}, // between two moved events
		{store.EventID{Tx: 105, Seq: 9}, "13 pg d"},
		{store.EventID{Tx: 107, Seq: 12}, ""},
		{store.EventID{Tx: 50, Seq: 1}, "10 pg a, 11 pg b, 12 pg c, 13 pg d"}, // before them all
		{store.EventID{Seq: 1}, "2 file 2, 10 pg a, 11 pg b, 12 pg c, 13 pg d"},
	})

	// The pending delivery is of event 12, and is sent under the id it
	// had on PostgreSQL, which a receiver may have seen.
	claimed, err := db.ClaimDeliveries(ctx, at.Add(time.Minute), time.Hour, nil, 10)
	if err != nil || len(claimed) != 1 || claimed[0].ID != 4 || claimed[0].EventID != (store.EventID{Seq: 12}) ||
		claimed[0].Event.ID != (store.EventID{Tx: 105, Seq: 9}) || !strings.Contains(string(claimed[0].Event.Data), "pg c") {
		t.Errorf("the pending delivery: %+v, %v; want delivery 4 of event 12 (pg c), sent as %s", claimed, err, store.EventID{Tx: 105, Seq: 9})
	}
	// The fan-out had reached "pg c": "pg d" is the one left to fan out.
	if n, err := db.FanOut(ctx, at.Add(time.Minute), 100); err != nil || n != 1 {
		t.Errorf("fanning out after the move: %d, %v; want the one event after the dispatched one", n, err)
	}
	c := store.Category{Name: "after"}
	if err := db.CreateCategory(ctx, &c, nil); err != nil {
		t.Fatal(err)
	}
	if got := names(store.EventID{Seq: 13}); got != "14 after" {
		t.Errorf("a new event: %s, want number 14", got)
	}
}

// TestImportRefusesKeysBboltCannotKeep: a key of the certificate store
// that bbolt cannot keep (empty, or past bolt's key size) makes the import
// refuse, naming it, and leaves the file empty, even past a committed
// batch; the same stream without it imports.
func TestImportRefusesKeysBboltCannotKeep(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	many := make([]store.Pet, 25_000) // more than one batch
	for i := range many {
		many[i] = store.Pet{ID: int64(i + 1), Name: "bulk", Status: store.StatusAvailable, Version: 1}
	}
	for _, c := range []struct {
		key, named string
	}{
		{"", `the certificate store's key "" (0 bytes)`},
		{strings.Repeat("k", 40_000), `the certificate store's key "kkkk`},
	} {
		from := &storetest.Snapshot{Pets: many, KV: []store.KVEntry{{Key: c.key, Value: []byte("cert"), Modified: at}}}
		db := openEmpty(t)
		err := db.Import(ctx, from)
		if store.ErrorCode(err) != store.EUNPROCESSABLE || !strings.Contains(err.Error(), c.named) || !strings.Contains(err.Error(), "nothing was copied") {
			t.Errorf("importing a key of %d bytes: %v", len(c.key), err)
		}
		if pets, _, err := db.ListPets(ctx, store.PetFilter{}); err != nil || len(pets) != 0 {
			t.Errorf("the file after the refusal holds pets: %d (%v)", len(pets), err)
		}
		from.KV[0].Key = "certificates/acme/example.com"
		if err := db.Import(ctx, from); err != nil {
			t.Errorf("the same stream with a key bbolt keeps: %v", err)
		} else if p, err := db.Pet(ctx, int64(len(many))); err != nil || p.Name != "bulk" {
			t.Errorf("the last pet of the stream: %+v, %v", p, err)
		}
	}
}

// TestImportCarriesTheIdsOfAnEarlierMove imports a stream such as a
// database gives that took a file that had come back from another
// database: the file's events (Tx 0), some with the ids they had in that
// other database (Was), then the database's own. Cursors of both
// databases resume where they would have, and the deliveries of both
// kinds of moved event go out under the ids they had.
func TestImportCarriesTheIdsOfAnEarlierMove(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	event := func(id, was store.EventID, name string) store.StoredEvent {
		return store.StoredEvent{Event: store.Event{ID: id, Type: store.EventCategoryCreated,
			CreatedAt: at, Data: json.RawMessage(fmt.Sprintf(`{"name":%q}`, name))}, Was: was}
	}
	delivery := func(id int64, event store.EventID) store.Delivery {
		return store.Delivery{ID: id, WebhookID: 1, EventID: event, EventType: store.EventCategoryCreated, Attempt: 1, State: store.DeliveryPending, ScheduledAt: at}
	}
	from := &storetest.Snapshot{
		Webhooks: []store.Webhook{{ID: 1, URL: "http://127.0.0.1:9/hook", Events: []string{"*"}, Enabled: true, CreatedAt: at, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}},
		Events: []store.StoredEvent{
			event(store.EventID{Seq: 1}, store.EventID{}, "file"),
			event(store.EventID{Seq: 10}, store.EventID{Tx: 100, Seq: 10}, "a"), event(store.EventID{Seq: 11}, store.EventID{Tx: 100, Seq: 11}, "b"),
			event(store.EventID{Tx: 300, Seq: 20}, store.EventID{}, "c"), event(store.EventID{Tx: 300, Seq: 21}, store.EventID{}, "d"),
		},
		Deliveries: []store.Delivery{delivery(1, store.EventID{Seq: 11}), delivery(2, store.EventID{Tx: 300, Seq: 21})},
		Rest:       store.Rest{Dispatched: store.EventID{Tx: 300, Seq: 21}, LastIDs: store.LastIDs{Events: 21, Webhooks: 1, Deliveries: 2}},
	}
	db := openEmpty(t)
	if err := db.Import(ctx, from); err != nil {
		t.Fatal(err)
	}
	names := func(after store.EventID) string { t.Helper(); return eventNames(t, db, after) }
	if got, want := names(store.EventID{}), "1 file, 10 a, 11 b, 20 c, 21 d"; got != want {
		t.Errorf("the events: %s\nwant %s", got, want)
	}
	wantAfterCursors(t, db, []cursorCase{
		{store.EventID{Tx: 100, Seq: 10}, "11 b, 20 c, 21 d"},
		{store.EventID{Tx: 50, Seq: 1}, "10 a, 11 b, 20 c, 21 d"}, // before the first database's
		{store.EventID{Tx: 300, Seq: 5}, "20 c, 21 d"},            // before the second's
		{store.EventID{Tx: 300, Seq: 20}, "21 d"},
	})
	claimed, err := db.ClaimDeliveries(ctx, at.Add(time.Minute), time.Hour, nil, 10)
	sentAs := map[int64]store.EventID{}
	for _, c := range claimed {
		sentAs[c.ID] = c.Event.ID
	}
	if err != nil || sentAs[1] != (store.EventID{Tx: 100, Seq: 11}) || sentAs[2] != (store.EventID{Tx: 300, Seq: 21}) {
		t.Errorf("the deliveries are sent as %v (%v), want 1 as %s and 2 as %s", sentAs, err, store.EventID{Tx: 100, Seq: 11}, store.EventID{Tx: 300, Seq: 21})
	}
}

type cursorCase struct {
	cursor store.EventID
	want   string // eventNames after the cursor mapped by EventCursor
}

// wantAfterCursors checks the events db lists after each case's cursor,
// one of an earlier database, once EventCursor has mapped it.
func wantAfterCursors(t *testing.T, db *boltstore.DB, cases []cursorCase) {
	t.Helper()
	for _, c := range cases {
		mapped, err := db.EventCursor(ctx, c.cursor)
		if err != nil {
			t.Fatal(err)
		}
		if got := eventNames(t, db, mapped); got != c.want {
			t.Errorf("after %s (%s here): %s\nwant %s", c.cursor, mapped, got, c.want)
		}
	}
}

// eventNames lists the events after the cursor as "seq name", the name
// being their data's: the short form the cursor tests compare.
func eventNames(t *testing.T, db *boltstore.DB, after store.EventID) string {
	t.Helper()
	es, err := db.Events(ctx, store.EventFilter{After: after, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		var d struct{ Name string }
		_ = json.Unmarshal(e.Data, &d)
		out = append(out, fmt.Sprintf("%d %s", e.ID.Seq, d.Name))
	}
	return strings.Join(out, ", ")
}
