package boltstore

import (
	"context"
	"reflect"
	"testing"
	"time"

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
	fromMemory, err := db.ClaimDeliveries(ctx, now, now.Add(time.Minute), nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range fromMemory {
		if db.leases().fresh[d.ID] != nil {
			t.Errorf("delivery %d claimed and still fresh", d.ID)
		}
	}
	// Reopened, the process has no leases and nothing fresh: the claim
	// reads the file.
	db = reopenTestDB(t, db)
	fromFile, err := db.ClaimDeliveries(ctx, now, now.Add(time.Minute), nil, 100)
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
