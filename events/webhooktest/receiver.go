// Package webhooktest runs a test's own webhook receivers: real HTTP
// servers that verify every delivery with the Standard Webhooks library
// (not the service's signer) and keep what they accepted.
package webhooktest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Event is a delivery's body: the envelope every event is sent in.
type Event struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"createdAt"`
	Data      json.RawMessage `json:"data"`
}

// Delivery is one request a receiver accepted, its signature verified.
type Delivery struct {
	// ID, Timestamp and Signature are the webhook-* headers.
	ID, Timestamp, Signature, Body string
	Event                          Event
}

// VerifiedBy reports whether d verifies with secret alone (the
// timestamp's freshness aside).
func (d Delivery) VerifiedBy(secret string) error {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return err
	}
	h := http.Header{}
	h.Set("webhook-id", d.ID)
	h.Set("webhook-timestamp", d.Timestamp)
	h.Set("webhook-signature", d.Signature)
	return wh.VerifyIgnoringTimestamp([]byte(d.Body), h)
}

// Options say how a receiver judges and answers deliveries.
type Options struct {
	// Secret is trusted from the start; Trust sets or replaces it.
	Secret string
	// IgnoreTimestamp skips the freshness check, for tests with far clocks.
	IgnoreTimestamp bool
	// Answers are the statuses of the first deliveries accepted, in turn,
	// then 200; every body is "answered <status>".
	Answers []int
	// Hang holds every request, unanswered, until the test ends.
	Hang bool
	// Lenient keeps what it refuses for Rejected instead of failing the
	// test, for receivers that see deliveries before their secret is known.
	Lenient bool
}

// Receiver verifies and keeps webhook deliveries; an http.Handler that
// Start serves on a server of its own.
type Receiver struct {
	// URL is the address of the server Start runs it on.
	URL string

	tb       testing.TB
	o        Options
	hang     chan struct{}
	mu       sync.Mutex
	verify   *standardwebhooks.Webhook
	got      []Delivery
	rejected []string
}

// New returns a receiver for a server of the test's own; Start is the
// usual way.
func New(tb testing.TB, o Options) *Receiver {
	r := newReceiver(tb, o)
	tb.Cleanup(func() { close(r.hang) })
	return r
}

// Start serves a new receiver on a server of its own until the test ends.
func Start(tb testing.TB, o Options) *Receiver {
	r := newReceiver(tb, o)
	srv := httptest.NewServer(r)
	tb.Cleanup(srv.Close)
	// Cleanups run last first: held requests are let go before Close waits.
	tb.Cleanup(func() { close(r.hang) })
	r.URL = srv.URL
	return r
}

func newReceiver(tb testing.TB, o Options) *Receiver {
	r := &Receiver{tb: tb, o: o, hang: make(chan struct{})}
	if o.Secret != "" {
		r.Trust(o.Secret)
	}
	return r
}

// Trust makes the receiver verify with secret (a new one after rotation).
func (r *Receiver) Trust(secret string) {
	wh := Verifier(r.tb, secret)
	r.mu.Lock()
	r.verify = wh
	r.mu.Unlock()
}

// Verifier is the Standard Webhooks verifier of secret.
func Verifier(tb testing.TB, secret string) *standardwebhooks.Webhook {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		tb.Fatal(err)
	}
	return wh
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if r.o.Hang {
		select {
		case <-r.hang:
		case <-req.Context().Done():
		}
		return
	}
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.check(body, req.Header); err != nil {
		r.refuse(body, fmt.Errorf("a delivery failed verification: %v: %s", err, body))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
		r.refuse(body, fmt.Errorf("a delivery sent as %s %s", req.Method, req.Header.Get("Content-Type")))
	}
	d := Delivery{ID: req.Header.Get("webhook-id"), Timestamp: req.Header.Get("webhook-timestamp"), Signature: req.Header.Get("webhook-signature"), Body: string(body)}
	if err := json.Unmarshal(body, &d.Event); err != nil || d.Event.ID != d.ID {
		r.refuse(body, fmt.Errorf("delivery %s (webhook-id %s): %v", body, d.ID, err))
	}
	r.got = append(r.got, d)
	status := http.StatusOK
	if len(r.o.Answers) > 0 {
		status, r.o.Answers = r.o.Answers[0], r.o.Answers[1:]
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, "answered %d", status)
}

func (r *Receiver) check(body []byte, h http.Header) error {
	switch {
	case r.verify == nil:
		return fmt.Errorf("no secret trusted yet")
	case r.o.IgnoreTimestamp:
		return r.verify.VerifyIgnoringTimestamp(body, h)
	default:
		return r.verify.Verify(body, h)
	}
}

func (r *Receiver) refuse(body []byte, err error) {
	if r.o.Lenient {
		r.rejected = append(r.rejected, string(body))
		return
	}
	r.tb.Error(err)
}

// Deliveries are every delivery accepted, in the order received.
func (r *Receiver) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// Events are the events accepted, each once (repeats share the
// webhook-id), in the order first received.
func (r *Receiver) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	var events []Event
	for _, d := range r.got {
		if !seen[d.ID] {
			seen[d.ID] = true
			events = append(events, d.Event)
		}
	}
	return events
}

// Rejected are the bodies of the deliveries a Lenient receiver refused or
// found malformed.
func (r *Receiver) Rejected() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.rejected)
}
