// The row of durable creates with one webhook subscribed to every event,
// on a server of its own delivering to a receiver in this process.

package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// labelPostPetsHook is POST /pets with one webhook on "*";
// labelPostPetsTwin the same on a twin server with none.
const (
	labelPostPetsHook = labelPostPets + ", one webhook on *"
	labelPostPetsTwin = labelPostPets + ", its twin with no webhook"
)

// targetHookVsNone: POST /pets req/s with a subscriber, x without.
const targetHookVsNone = 0.9

// webhookStore starts two servers on small-store-like stores, one with a
// webhook on everything, and adds their rows of creates, one after the
// other each round. They serve nothing else, so that both pay alike for
// idleness between slices (the heap given back and taken again).
func (b *bench) webhookStore(ctx context.Context) error {
	twin, _, err := b.smallServer(ctx, "petstore, twin of the one with a webhook", b.bin, "twin.db", "--webhook-allow-private")
	if err != nil {
		return err
	}
	if err := b.postPetsJob(ctx, twin, labelPostPetsTwin); err != nil {
		return err
	}
	p, _, err := b.smallServer(ctx, "petstore with a webhook", b.bin, "webhooks.db", "--webhook-allow-private")
	if err != nil {
		return err
	}
	rcv, err := newReceiver()
	if err != nil {
		return err
	}
	api := p.api()
	b.hook = &hookRow{proc: p, api: api, rcv: rcv}
	var hook struct {
		Secret string `json:"secret"`
	}
	if _, err := api.do(ctx, "POST", "/admin/webhooks", b.adminHeader(), fmt.Sprintf(`{"url":%q,"events":["*"]}`, rcv.url()), 201, &hook); err != nil {
		return fmt.Errorf("creating the webhook: %w", err)
	}
	if err := rcv.setSecret(hook.Secret); err != nil {
		return err
	}
	// Every event after the webhook's is the receiver's.
	for i, path := range eventLists {
		ids, err := b.eventIDs(ctx, api, path, "")
		if err != nil {
			return err
		}
		if len(ids) > 0 {
			b.hook.cursor[i] = ids[len(ids)-1]
		}
	}
	return b.postPetsJob(ctx, p, labelPostPetsHook)
}

// postPetsJob adds the job of p's row label, POST /pets under another
// name, after seeding p as the small store's server is.
func (b *bench) postPetsJob(ctx context.Context, p *proc, label string) error {
	suffix := strings.TrimPrefix(label, labelPostPets)
	jobs, err := b.apiJobs(ctx, p, suffix, false)
	if err != nil {
		return err
	}
	b.jobs = append(b.jobs, jobs[slices.IndexFunc(jobs, func(j job) bool { return j.label == label })])
	return nil
}

type hookRow struct {
	proc   *proc
	api    *apiClient
	rcv    *receiver
	cursor [2]string // the newest event of each list when the webhook was made

	events   int           // the events after cursor, once the load ended
	missing  int           // of them, not yet delivered when the load ended
	caughtUp time.Duration // from the end of the load until the receiver had all
	cpu      time.Duration // the server's CPU time over that wait
}

// eventLists are the two event lists; every event in them is the webhook's.
var eventLists = [2]string{"/events", "/admin/events"}

// maxCatchUp bounds the wait for the deliveries after the load.
const maxCatchUp = 2 * time.Minute

func (b *bench) adminHeader() http.Header {
	return http.Header{"Authorization": {"Bearer " + b.adminToken}, "Accept": {"application/json"}}
}

func (b *bench) eventIDs(ctx context.Context, api *apiClient, path, after string) ([]string, error) {
	var ids []string
	for {
		q := path + "?limit=100"
		if after != "" {
			q += "&after=" + after
		}
		var page []struct {
			ID string `json:"id"`
		}
		if _, err := api.do(ctx, "GET", q, b.adminHeader(), "", 200, &page); err != nil {
			return nil, fmt.Errorf("listing the events: %w", err)
		}
		for _, e := range page {
			ids = append(ids, e.ID)
		}
		if len(page) < 100 {
			return ids, nil
		}
		after = page[len(page)-1].ID
	}
}

// webhookCatchUp waits after the load until the receiver has every event
// written since the webhook was made, and records how long: a delivery
// that fell behind shows here, and a lost event is an error.
func (b *bench) webhookCatchUp(ctx context.Context) error {
	h := b.hook
	if h == nil {
		return nil
	}
	end := time.Now()
	cpu0, _, err := h.proc.cpuTimes()
	if err != nil {
		return err
	}
	delivered, _ := h.rcv.distinct()
	var want []string
	for i, path := range eventLists {
		ids, err := b.eventIDs(ctx, h.api, path, h.cursor[i])
		if err != nil {
			return err
		}
		want = append(want, ids...)
	}
	h.events = len(want)
	h.missing = max(h.events-delivered, 0)
	b.progress("webhook row: %d events since the webhook was made, %d not yet delivered; waiting up to %v", h.events, h.missing, maxCatchUp)
	for {
		if want = slices.DeleteFunc(want, h.rcv.has); len(want) == 0 {
			_, last := h.rcv.distinct()
			h.caughtUp = max(last.Sub(end), 0)
			break
		}
		if time.Since(end) > maxCatchUp {
			b.fail("webhook row: %d of %d events never reached the receiver within %v of the load's end, e.g. %s", len(want), h.events, maxCatchUp, want[0])
			break
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	cpu1, _, err := h.proc.cpuTimes()
	h.cpu = cpu1 - cpu0
	if n := h.rcv.failures.Load(); n > 0 {
		h.rcv.mu.Lock()
		first := h.rcv.firstErr
		h.rcv.mu.Unlock()
		b.fail("webhook row: the receiver refused %d deliveries, the first: %s", n, first)
	}
	return err
}

// webhookReport adds the row and its comparison with the twin's, measured
// slice by slice in the same run.
func (b *bench) webhookReport(r *report) {
	hook, twin, none := b.loads[labelPostPetsHook], b.loads[labelPostPetsTwin], b.loads[labelPostPets]
	if hook == nil {
		return
	}
	r.load(labelPostPetsTwin, twin, rpsVs(twin, none, "the small store's", "", 0))
	r.load(labelPostPetsHook, hook,
		rpsVs(hook, twin, "its twin with none", ">=", targetHookVsNone),
		cpuVs(hook, twin, "its twin with none", "", 0),
		rpsVs(hook, none, "the small store's", "", 0))
	if h := b.hook; h != nil {
		distinct, _ := h.rcv.distinct()
		r.notes = append(r.notes, fmt.Sprintf("webhook row: the receiver (in the benchmark's process: its CPU is in the client's; it verifies each signature and answers 204) got %d deliveries of %d distinct events; "+
			"%d events were written since the webhook was made, %d of them not yet delivered when the load ended, the last delivered %.2f s after it (the server's CPU from the load's end until all were delivered: %.2f s)",
			h.rcv.received.Load(), distinct, h.events, h.missing, h.caughtUp.Seconds(), h.cpu.Seconds()))
	}
}
