package handlers_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/events/webhooktest"
)

// A secret's rotation overlaps: deliveries carry the new secret's
// signature and the old one's, each verified by the Standard Webhooks
// library, so a receiver still holding the old secret verifies them, until
// the old one is expired on request (or a rotation asks for no overlap);
// then only the new one verifies. The secrets never show again.
func TestSecretRotationOverlaps(t *testing.T) {
	ts := newTestServer(t, withEvents(t))
	rcv := webhooktest.Start(t, webhooktest.Options{Lenient: true})
	var w webhookJSON
	ts.adminDo("POST", "/admin/webhooks", `{"url":"`+rcv.URL+`","events":["webhook.test"]}`).wantStatus(201).decode(&w)
	old := w.Secret
	rcv.Trust(old) // a receiver that is never given the new secret
	path := fmt.Sprint("/admin/webhooks/", w.ID)

	// delivered sends a webhook.test and waits for its first delivery,
	// accepted by the receiver or refused.
	delivered := func(what string) (d webhooktest.Delivery, accepted bool) {
		t.Helper()
		var e webhooktest.Event
		ts.adminDo("POST", path+"/test", "").wantStatus(202).decode(&e)
		domaintest.WaitFor(t, 20*time.Second, 5*time.Millisecond, func() error {
			for _, got := range rcv.Deliveries() {
				if got.ID == e.ID {
					d, accepted = got, true
					return nil
				}
			}
			if slices.ContainsFunc(rcv.Rejected(), func(body string) bool { return strings.Contains(body, e.ID) }) {
				return nil
			}
			return fmt.Errorf("%s: event %s not delivered", what, e.ID)
		})
		return d, accepted
	}
	verifies := func(what string, d webhooktest.Delivery, secret string, want bool) {
		t.Helper()
		if err := d.VerifiedBy(secret); (err == nil) != want {
			t.Errorf("%s: verified by %.12s…: %v, want %v (webhook-signature %q)", what, secret, err, want, d.Signature)
		}
	}
	noSecrets := func(what string, body []byte, overlap bool) {
		t.Helper()
		if strings.Contains(string(body), old) || strings.Contains(string(body), `"previousSecret"`) {
			t.Errorf("%s shows the previous secret: %s", what, body)
		}
		if strings.Contains(string(body), `"previousSecretExpiresAt"`) != overlap {
			t.Errorf("%s: previousSecretExpiresAt shown %v, want %v: %s", what, !overlap, overlap, body)
		}
	}

	if d, ok := delivered("before the rotation"); !ok || strings.Contains(d.Signature, " ") {
		t.Fatalf("before the rotation: accepted %v, webhook-signature %q", ok, d.Signature)
	}

	// Rotated as old clients do, without a body: 24 hours of overlap.
	var rotated struct {
		Secret                  string    `json:"secret"`
		PreviousSecretExpiresAt time.Time `json:"previousSecretExpiresAt"`
	}
	before := time.Now()
	res := ts.adminDo("POST", path+"/rotate-secret", "").wantStatus(200)
	res.decode(&rotated)
	noSecrets("the rotation's answer", res.body, true)
	if rotated.Secret == old || !strings.HasPrefix(rotated.Secret, "whsec_") {
		t.Fatalf("rotated secret %q", rotated.Secret)
	}
	if until := rotated.PreviousSecretExpiresAt; until.Before(before.Add(24*time.Hour-time.Second)) || until.After(time.Now().Add(24*time.Hour)) {
		t.Errorf("the previous secret signs until %v, want 24 hours from now", until)
	}
	noSecrets("GET during the overlap", ts.adminDo("GET", path, "").wantStatus(200).body, true)
	noSecrets("the list during the overlap", ts.adminDo("GET", "/admin/webhooks", "").wantStatus(200).body, true)
	d, ok := delivered("during the overlap")
	if !ok {
		t.Fatalf("during the overlap, the receiver holding the old secret refused a delivery")
	}
	verifies("during the overlap", d, old, true)
	verifies("during the overlap", d, rotated.Secret, true)

	// Expired on request: the old secret no longer verifies.
	res = ts.adminDo("POST", path+"/expire-previous-secret", "").wantStatus(200)
	noSecrets("the expiry's answer", res.body, false)
	if strings.Contains(string(res.body), "whsec_") {
		t.Errorf("the expiry's answer shows a secret: %s", res.body)
	}
	noSecrets("GET after the expiry", ts.adminDo("GET", path, "").wantStatus(200).body, false)
	if _, ok := delivered("after the expiry"); ok {
		t.Errorf("after the expiry, the receiver holding the old secret accepted a delivery")
	}
	rcv.Trust(rotated.Secret)
	d, ok = delivered("after the expiry, to the new secret")
	if !ok {
		t.Fatalf("after the expiry, the new secret does not verify")
	}
	verifies("after the expiry", d, old, false)
	verifies("after the expiry", d, rotated.Secret, true)

	// Two rotations in a row: the newest two secrets sign, not the one
	// before them.
	var third, fourth webhookJSON
	ts.adminDo("POST", path+"/rotate-secret", "").wantStatus(200).decode(&third)
	ts.adminDo("POST", path+"/rotate-secret", "").wantStatus(200).decode(&fourth)
	rcv.Trust(fourth.Secret)
	d, ok = delivered("after two rotations")
	if !ok {
		t.Fatalf("after two rotations, the newest secret does not verify")
	}
	verifies("after two rotations", d, third.Secret, true)
	verifies("after two rotations", d, rotated.Secret, false)
}
