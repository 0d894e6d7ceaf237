package boltstore

import (
	"context"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// A claim of deliveries FanOut just made takes them from memory; it must
// give exactly what a claim reading the file gives: the same deliveries,
// events and webhooks, and none of a webhook deleted meanwhile.
func TestClaimOfFreshDeliveriesMatchesTheFile(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	var hooks []store.Webhook
	for _, events := range [][]string{{"*"}, {store.EventCategoryCreated}, {"*"}} {
		w := store.Webhook{URL: "http://receiver.test/", Events: events, Enabled: true, Secret: "whsec_AAAA"}
		if err := db.CreateWebhook(ctx, &w, nil); err != nil {
			t.Fatal(err)
		}
		hooks = append(hooks, w)
	}
	c := store.Category{Name: "dogs"}
	if err := db.CreateCategory(ctx, &c, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c"} {
		if err := db.CreatePet(ctx, &store.Pet{Name: name, CategoryID: c.ID}, nil); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	if n, err := db.FanOut(ctx, now, 100); err != nil || n == 0 {
		t.Fatalf("FanOut = %d, %v", n, err)
	}
	if err := db.DeleteWebhook(ctx, hooks[2].ID); err != nil {
		t.Fatal(err)
	}
	fromMemory, err := db.ClaimDeliveries(ctx, now, time.Minute, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range fromMemory {
		if db.deliveryLeases.fresh.Contains(d.ID) {
			t.Errorf("delivery %d claimed and still fresh", d.ID)
		}
	}
	// Reopened, the process has no leases and nothing fresh: the claim
	// reads the file.
	db = reopenTestDB(t, db)
	fromFile, err := db.ClaimDeliveries(ctx, now, time.Minute, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(fromFile) != 5 { // 4 events to the first webhook, 1 to the second
		t.Errorf("%d deliveries claimed from the file, want 5", len(fromFile))
	}
	if !reflect.DeepEqual(fromMemory, fromFile) {
		t.Errorf("claimed from memory:\n%+v\nfrom the file:\n%+v", fromMemory, fromFile)
	}
}

// A rotated webhook's previous secret and its expiry survive a restart:
// the overlap goes on signing after it.
func TestRotatedSecretSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	w := store.Webhook{URL: "http://receiver.test/", Events: []string{"*"}, Enabled: true, Secret: "whsec_AAAA"}
	if err := db.CreateWebhook(ctx, &w, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rotated, err := db.UpdateWebhook(ctx, w.ID, func(w *store.Webhook) error {
		w.RotateSecret("whsec_BBBB", now, time.Hour)
		return nil
	}, nil)

	if err != nil {
		t.Fatal(err)
	}
	db = reopenTestDB(t, db)
	got, err := db.Webhook(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rotated) || got.SigningSecrets(now) != "whsec_BBBB whsec_AAAA" {
		t.Errorf("after a restart: %+v, want %+v signing with both", got, rotated)
	}
}

// The fresh deliveries kept are maxFresh at most: the oldest made goes
// first, the others stay, and a claim reads the one gone from the file.
func TestFreshDeliveriesForgetTheOldest(t *testing.T) {
	db, ctx := openTestDB(t), context.Background()
	hook := store.Webhook{URL: "http://receiver.test/", Events: []string{store.EventPetCreated}, Enabled: true, Secret: "whsec_AAAA"}
	if err := db.CreateWebhook(ctx, &hook, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		for i := range maxFresh + 1 {
			if err := db.emit(tx, store.EventPetCreated, map[string]int{"id": i + 1}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	// The first two events one at a time, then the rest.
	for range 2 {
		if n, err := db.FanOut(ctx, now, 1); err != nil || n != 1 {
			t.Fatalf("FanOut = %d, %v", n, err)
		}
	}
	first := db.deliveryLeases.fresh.Keys() // oldest first
	if len(first) != 2 {
		t.Fatalf("%d fresh deliveries after two events, want 2", len(first))
	}
	if _, err := db.FanOut(ctx, now, 2*maxFresh); err != nil {
		t.Fatal(err)
	}
	fresh := db.deliveryLeases.fresh
	if fresh.Contains(first[0]) {
		t.Error("the oldest fresh delivery is still kept")
	}
	if !fresh.Contains(first[1]) {
		t.Error("the second oldest fresh delivery was forgotten too")
	}
	if n := fresh.Len(); n != maxFresh {
		t.Errorf("%d fresh deliveries kept, want %d", n, maxFresh)
	}
	claimed, err := db.ClaimDeliveries(ctx, now, time.Minute, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 1 || claimed[0].ID != first[0] || string(claimed[0].Event.Data) != `{"id":1}` {
		t.Errorf("claimed %+v, want delivery %d of the first event", claimed, first[0])
	}
}

// Claims keep the webhooks they decoded: a claim after the webhook
// changed (its secret rotated) gets the change, never the decoded copy,
// and the table forgets the least recently claimed past its size.
func TestClaimsDecodeAChangedWebhookAgain(t *testing.T) {
	db, ctx := openTestDB(t), context.Background()
	hook := store.Webhook{URL: "http://receiver.test/", Events: []string{store.EventPetCreated}, Enabled: true, Secret: "whsec_AAAA"}
	if err := db.CreateWebhook(ctx, &hook, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claimOne := func() store.Claimed {
		t.Helper()
		if err := db.bolt.Update(func(tx *bolt.Tx) error {
			return db.emit(tx, store.EventPetCreated, map[string]int{"id": 1})
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.FanOut(ctx, now, 10); err != nil {
			t.Fatal(err)
		}
		claimed, err := db.ClaimDeliveries(ctx, now, time.Minute, nil, 10)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claimed %+v, %v; want one delivery", claimed, err)
		}
		return claimed[0]
	}
	if c := claimOne(); c.Webhook.SigningSecrets(now) != "whsec_AAAA" {
		t.Fatalf("first claim signs with %q", c.Webhook.SigningSecrets(now))
	}
	if _, err := db.UpdateWebhook(ctx, hook.ID, func(w *store.Webhook) error {
		w.RotateSecret("whsec_BBBB", now, time.Hour)
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	if c := claimOne(); c.Webhook.SigningSecrets(now) != "whsec_BBBB whsec_AAAA" {
		t.Errorf("a claim after the rotation signs with %q, want both secrets", c.Webhook.SigningSecrets(now))
	}

	hooks := db.deliveryLeases.hooks
	for id := int64(1); id <= maxDecodedWebhooks; id++ {
		hooks.Add(hook.ID+id, decodedWebhook{})
	}
	if hooks.Len() != maxDecodedWebhooks || hooks.Contains(hook.ID) {
		t.Errorf("%d webhooks kept decoded, the least recently claimed among them: %v", hooks.Len(), hooks.Contains(hook.ID))
	}
}
