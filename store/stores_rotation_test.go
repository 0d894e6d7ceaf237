package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"petstore/store"
)

// testSecretRotation: a rotated webhook keeps its previous secret and when
// it stops signing, read back, listed and claimed alike; ending the
// overlap forgets it.
func testSecretRotation(t *testing.T, s store.Store) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	w := newWebhook(t, s, "http://a.example/", "whsec_first")
	rotated := must(s.UpdateWebhook(ctx, w.ID, func(w *store.Webhook) error {
		w.RotateSecret("whsec_second", now, store.DefaultSecretOverlap)
		return nil
	}, nil))(t)
	until := now.Add(store.DefaultSecretOverlap).Truncate(time.Second)
	kept := func(what string, got store.Webhook) {
		t.Helper()
		if got.Secret != "whsec_second" || got.PreviousSecret != "whsec_first" ||
			got.PreviousSecretExpiresAt == nil || !got.PreviousSecretExpiresAt.Equal(until) {
			t.Errorf("%s: secret %q, previous %q until %v; want whsec_second, whsec_first until %v",
				what, got.Secret, got.PreviousSecret, got.PreviousSecretExpiresAt, until)
		}
		if got.SigningSecrets(now) != "whsec_second whsec_first" || got.SigningSecrets(until) != "whsec_second" {
			t.Errorf("%s: signs with %q now and %q at the expiry", what, got.SigningSecrets(now), got.SigningSecrets(until))
		}
	}
	kept("the update's answer", rotated)
	kept("read back", must(s.Webhook(ctx, w.ID))(t))
	list, _ := must2(s.Webhooks(ctx, store.Page{}))(t)
	kept("listed", list[0])

	// A delivery claimed during the overlap carries both secrets.
	must(s.RecordEvent(ctx, store.PendingEvent{Type: store.EventWebhookTest, Data: json.RawMessage(`{}`)}, w.ID, nil))(t)
	fanOut(t, s, now, 1)
	claimed := must(s.ClaimDeliveries(ctx, now.Add(time.Second), time.Minute, nil, 10))(t)
	if len(claimed) != 1 {
		t.Fatalf("claimed %d deliveries, want 1", len(claimed))
	}
	kept("claimed", claimed[0].Webhook)

	// Ended on request: forgotten, and only the new secret signs.
	ended := must(s.UpdateWebhook(ctx, w.ID, func(w *store.Webhook) error {
		w.ExpirePreviousSecret(now, true)
		return nil
	}, nil))(t)
	got := must(s.Webhook(ctx, w.ID))(t)
	for what, w := range map[string]store.Webhook{"the update's answer": ended, "read back": got} {
		if w.PreviousSecret != "" || w.PreviousSecretExpiresAt != nil || w.SigningSecrets(now) != "whsec_second" {
			t.Errorf("%s after the overlap was ended: previous %q until %v, signs with %q", what, w.PreviousSecret, w.PreviousSecretExpiresAt, w.SigningSecrets(now))
		}
	}
}
