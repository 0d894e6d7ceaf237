package events

import (
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Signed with two secrets (a rotation's overlap), a delivery carries two
// signatures, and the Standard Webhooks library verifies it with either
// secret alone, and not with a third.
func TestSignWithSeveralSecrets(t *testing.T) {
	var secrets []string
	for range 3 {
		secrets = append(secrets, NewSecret())
	}
	body := []byte(`{"id":"evt_1","type":"webhook.test"}`)
	h := http.Header{}
	sg, err := newSigner(secrets[0] + " " + secrets[1])
	if err != nil {
		t.Fatal(err)
	}
	sg.sign(h, "evt_1", time.Now(), body)
	if sigs := strings.Fields(h.Get("webhook-signature")); len(sigs) != 2 {
		t.Fatalf("webhook-signature %q, want two signatures", h.Get("webhook-signature"))
	}
	for i, secret := range secrets {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, h); (err == nil) != (i < 2) {
			t.Errorf("secret %d: verify %v", i, err)
		}
	}
	if _, err := newSigner(" "); err == nil {
		t.Error("a signer with no secret")
	}
}
