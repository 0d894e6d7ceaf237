// The row of durable creates with one webhook subscribed to every event:
// the same creates as the row without one, on a server of its own whose
// engine delivers each event to a receiver in this process.

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
)

// labelPostPetsHook is the row of POST /pets with one webhook on "*".
const labelPostPetsHook = labelPostPets + ", one webhook on *"

// targetHookVsNone: POST /pets req/s with a subscriber, x without.
const targetHookVsNone = 0.9

// webhookStore starts a server on a store like the small one, with a
// webhook subscribed to everything, and adds its row of creates.
func (b *bench) webhookStore(ctx context.Context) error {
	data := filepath.Join(b.dir, "webhooks.db")
	catID, _, err := b.importStore(ctx, data, b.cfg.pets)
	if err != nil {
		return err
	}
	var received atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.closers = append(b.closers, rcv.Close)
	p, _, err := b.startPetstore(ctx, "petstore with a webhook", nil, "--data", data, "--admin-token", b.adminToken, "--webhook-allow-private")
	if err != nil {
		return err
	}
	client := newClient(b.cfg.connections)
	api := &apiClient{client: client.Client, base: p.base()}
	admin := http.Header{"Authorization": {"Bearer " + b.adminToken}}
	if _, err := api.do(ctx, "POST", "/admin/webhooks", admin, fmt.Sprintf(`{"url":%q,"events":["*"]}`, rcv.URL), 201, nil); err != nil {
		return fmt.Errorf("creating the webhook: %w", err)
	}
	jobs, err := b.apiJobs(ctx, p, client, b.cfg.pets, catID, ", one webhook on *")
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if j.label == labelPostPetsHook {
			b.jobs = append(b.jobs, j)
		}
	}
	b.hookReceived = &received
	return nil
}

// webhookReport adds the row and its comparison with the row without a
// subscriber, measured in the same run, slice by slice.
func (b *bench) webhookReport(r *report) {
	hook, none := b.loads[labelPostPetsHook], b.loads[labelPostPets]
	if hook == nil {
		return
	}
	r.load(labelPostPetsHook, hook, rpsVs(hook, none, "no subscriber", ">=", targetHookVsNone))
	if b.hookReceived != nil {
		r.notes = append(r.notes, fmt.Sprintf("webhook row: the receiver (in the benchmark's process) had %d deliveries when the report was written", b.hookReceived.Load()))
	}
}
