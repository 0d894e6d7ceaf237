// Package events delivers the outbox's events to subscribed webhooks
// (signed as Standard Webhooks specifies, retried on a schedule, private
// destinations refused), prunes what is past retention, and feeds the
// live streams.
package events

import (
	"bytes"
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"petstore/bounded"
	"petstore/store"
)

// Schedule is the wait before each retry of a failed attempt; after the
// last, the delivery has failed.
var Schedule = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// Limits of one attempt.
const (
	// Timeout bounds an attempt from its claim, connection and answer
	// included, and the write that records a batch of outcomes.
	Timeout = 10 * time.Second
	// ResponseLimit is how much of an answer the delivery log keeps.
	ResponseLimit = 4 << 10
	// DisableAfter is how long an endpoint may fail without a success
	// before it is disabled.
	DisableAfter = 5 * 24 * time.Hour
)

// leaseFor is a claim's lease when an attempt may take timeout and the
// write of its outcome record: both, the batch's wait, and a margin.
// Strictly longer than the attempt, whose deadline starts before the store
// starts the lease, so that no other instance sends it again meanwhile.
func leaseFor(timeout, record time.Duration) time.Duration {
	return timeout + recordWait + record + time.Second
}

// Store is what the engine needs of the store.
type Store interface {
	Events(ctx context.Context, f store.EventFilter) ([]store.Event, error)
	NewestEvent(ctx context.Context) (store.EventID, error)
	FanOut(ctx context.Context, now time.Time, limit int) (int, error)
	ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, busy []int64, limit int) ([]store.Claimed, error)
	FinishDeliveries(ctx context.Context, done []store.Finished) error
	PruneEvents(ctx context.Context, t time.Time) (int, error)
}

// Config configures an Engine.
type Config struct {
	Store  Store
	Policy Policy
	// Now is the clock of the schedule; nil is time.Now.
	Now func() time.Time
	// Retention is how long events and delivery logs are kept.
	Retention time.Duration
	// Poll is how often the outbox and the due deliveries are looked at.
	Poll time.Duration
	// RootCAs verify https receivers' certificates; nil is the system's.
	RootCAs *x509.CertPool
	Log     *slog.Logger
	// Timeout replaces the package's Timeout when set (tests shorten it).
	Timeout time.Duration
}

// Engine delivers events; its work runs in Run, never on a request's path.
type Engine struct {
	cfg    Config
	dialer *net.Dialer
	hub    *Hub
	// fanOutFailures repeat at every poll while the database is away: a few
	// log lines, not one each.
	fanOutFailures store.RepeatedFailure

	// timeout bounds each attempt from its claim (tests shorten it); lease is
	// its claims' lease.
	timeout, lease time.Duration

	mu       sync.Mutex
	inFlight map[int64]int
	// signers are the webhooks' signers by secret, senders their URLs'; an
	// evicted sender's idle connections are closed.
	signers *bounded.Cache[string, *signer]
	senders *bounded.Cache[senderKey, *sender]
	wg      sync.WaitGroup
	// wake starts the next step when an attempt ends, so that a backlog keeps
	// going between polls.
	wake chan struct{}
	// claimLeft: the last claim may have left due deliveries behind (Run's
	// goroutine only).
	claimLeft bool
	// finished takes outcomes to the recorder, which records all waiting in
	// one transaction.
	finished chan store.Finished
	stats    Stats
}

// New builds an engine.
func New(cfg Config) *Engine {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Poll = cmp.Or(cfg.Poll, 100*time.Millisecond)
	cfg.Log = cmp.Or(cfg.Log, slog.New(slog.DiscardHandler))
	cfg.Timeout = cmp.Or(cfg.Timeout, Timeout)
	return &Engine{
		cfg:      cfg,
		dialer:   &net.Dialer{Timeout: cfg.Timeout, Control: cfg.Policy.control, Resolver: cfg.Policy.Resolver},
		timeout:  cfg.Timeout,
		lease:    leaseFor(cfg.Timeout, cfg.Timeout),
		signers:  bounded.New[string, *signer](maxSigners, nil),
		senders:  bounded.New(maxSigners, func(_ senderKey, s *sender) { s.closeIdle() }),
		hub:      &Hub{store: cfg.Store, poll: cfg.Poll, subs: map[*Subscription]struct{}{}},
		inFlight: map[int64]int{},
		wake:     make(chan struct{}, 1),
		finished: make(chan store.Finished, maxRecordBatch),
	}
}

// Hub is the live feed of events for the streams.
func (e *Engine) Hub() *Hub { return e.hub }

// Run delivers until ctx ends, then waits for the attempts under way and
// records their outcomes.
func (e *Engine) Run(ctx context.Context) {
	go e.hub.run(ctx)
	var recorder sync.WaitGroup
	recorder.Go(func() { e.record(ctx) })
	defer func() {
		e.wg.Wait()
		close(e.finished)
		recorder.Wait()
		e.mu.Lock()
		for _, s := range e.senders.Values() {
			s.closeIdle()
		}
		e.mu.Unlock()
	}()
	tick := time.NewTicker(e.cfg.Poll)
	defer tick.Stop()
	prune := time.NewTicker(max(min(e.cfg.Retention/24, time.Hour), time.Second))
	defer prune.Stop()
	e.prune(ctx)
	// soon fans out again shortly after a fan-out that found events, not at
	// each wake: a fan-out is a write, and one for many events costs about
	// what one for a single event does. A wake only claims.
	soon := time.NewTimer(time.Hour)
	soon.Stop()
	defer soon.Stop()
	armed, fanOut := false, true
	for {
		if e.step(ctx, fanOut) && !armed {
			soon.Reset(fanOutSoon)
			armed = true
		}
		fanOut = true
		select {
		case <-ctx.Done():
			return
		case <-prune.C:
			e.prune(ctx)
		case <-tick.C:
		case <-soon.C:
			armed = false
		case <-e.wake:
			fanOut = false
		}
	}
}

// claimLimit bounds the deliveries one claim takes.
const claimLimit = 64

// fanOutSoon is short beside Poll, so that a busy webhook waits little,
// and long beside a request, so that each fan-out takes many.
const fanOutSoon = 5 * time.Millisecond

func (e *Engine) prune(ctx context.Context) {
	if e.cfg.Retention <= 0 {
		return
	}
	if _, err := e.cfg.Store.PruneEvents(ctx, e.cfg.Now().Add(-e.cfg.Retention)); err != nil && ctx.Err() == nil {
		e.cfg.Log.Warn("pruning events", "err", err)
	}
}

// step fans new events out (when fanOut is set) and starts the attempts
// that are due; it reports whether the fan-out found events.
func (e *Engine) step(ctx context.Context, fanOut bool) (found bool) {
	now := e.cfg.Now()
	for fanOut {
		n, err := e.cfg.Store.FanOut(ctx, now, 500)
		if err != nil {
			if ctx.Err() == nil {
				e.fanOutFailures.Failed(e.cfg.Log, "fanning events out to webhooks", "err", err)
			}
			return found
		}
		e.fanOutFailures.Succeeded()
		e.stats.fannedOut.Add(uint64(n))
		found = found || n > 0
		if n < 500 {
			break
		}
	}
	if !fanOut && !e.claimLeft {
		// A wake, and the last claim took everything due: nothing to claim until
		// the next fan-out or poll.
		return found
	}
	// Counted from before the claim that starts the lease.
	deadline := time.Now().Add(e.timeout)
	busy, _ := e.busy()
	claimed, err := e.cfg.Store.ClaimDeliveries(ctx, now, e.lease, busy, claimLimit)
	if err != nil {
		if ctx.Err() == nil {
			e.cfg.Log.Warn("claiming webhook deliveries", "err", err)
		}
		e.claimLeft = true
		return found
	}
	// The claim's attempts share a context; each gives its share back once
	// ended, and so does this loop once all have started.
	var cctx *claimContext
	if len(claimed) > 0 {
		cctx = newClaimContext(ctx, deadline, len(claimed)+1)
		defer cctx.done()
	}
	for i := range claimed {
		d := &claimed[i]
		e.mu.Lock()
		e.inFlight[d.WebhookID]++
		e.mu.Unlock()
		err := notSent(d)
		o := store.Outcome{AttemptedAt: now, NotSent: err != nil}
		var s *sender
		var sg *signer
		if err == nil {
			e.stats.started(d, now)
			s, err = e.sender(d.Webhook)
		}
		if err == nil {
			sg, err = e.signer(d.Webhook.SigningSecrets(now))
		}
		if err != nil {
			cctx.done()
			o.Error = err.Error()
			e.finish(ctx, d, o)
			continue
		}
		s.sendIn(ctx, job{d, sg}, cctx)
	}
	// A claim stops at its limit or at a webhook's slots, possibly leaving
	// due deliveries for the next wake.
	_, full := e.busy()
	e.claimLeft = len(claimed) == claimLimit || full
	return found
}

func (e *Engine) sender(w store.Webhook) (*sender, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return bounded.GetOrAdd(e.senders, senderKey{w.ID, w.URL}, func() (*sender, error) { return e.newSender(w.URL) })
}

// busy lists each webhook once per attempt of it in flight here: a claim
// takes only its free slots, so no attempt waits for a connection, its time
// running. full: a webhook has all its slots taken.
func (e *Engine) busy() (out []int64, full bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for id, n := range e.inFlight {
		out = append(out, slices.Repeat([]int64{id}, n)...)
		full = full || n >= store.MaxInFlightPerWebhook
	}
	return out, full
}

// finish takes an attempt's outcome to the recorder and frees its slot.
func (e *Engine) finish(ctx context.Context, d *store.Claimed, o store.Outcome) {
	if !o.Succeeded && !o.NotSent {
		o.Next = nextAttempt(&d.Delivery, o.AttemptedAt)
		if d.Webhook.FailingSince != nil && o.AttemptedAt.Sub(*d.Webhook.FailingSince) >= DisableAfter {
			o.Disable = fmt.Sprintf("every delivery failed since %s (for more than %s); the last: %s",
				d.Webhook.FailingSince.Format(time.RFC3339), DisableAfter, o.Error)
			o.Next = nil
		}
	}
	e.finished <- store.Finished{Claimed: d, Outcome: o}
	e.mu.Lock()
	left := e.inFlight[d.WebhookID] - 1
	if e.inFlight[d.WebhookID] = left; left <= 0 {
		delete(e.inFlight, d.WebhookID)
	}
	e.mu.Unlock()
	// A claim reads past a busy webhook's backlog: waking at half the slots
	// free, not at each, lets one claim fill them.
	if left <= store.MaxInFlightPerWebhook/2 {
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
}

// maxRecordBatch bounds the outcomes one transaction records, and
// recordWait how long the first of them waits for others.
const (
	maxRecordBatch = 256
	recordWait     = 20 * time.Millisecond
)

// record records outcomes until Run closes finished, those that end within
// recordWait of the first in one transaction: a busy webhook costs a write
// per batch, not per attempt. A delivery stays leased until its outcome is
// recorded, so no other attempt of it starts meanwhile.
func (e *Engine) record(ctx context.Context) {
	batch := make([]store.Finished, 0, maxRecordBatch)
	timer := time.NewTimer(recordWait)
	for f := range e.finished {
		batch = append(batch[:0], f)
		timer.Reset(recordWait)
	more:
		for len(batch) < maxRecordBatch {
			select {
			case f, ok := <-e.finished:
				if !ok {
					break more
				}
				batch = append(batch, f)
			case <-timer.C:
				break more
			}
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.Timeout)
		if err := e.cfg.Store.FinishDeliveries(rctx, batch); err != nil {
			// The leases run out and the attempts are made again: at least once.
			e.cfg.Log.Warn("recording webhook deliveries", "deliveries", len(batch), "err", err)
		}
		e.stats.attempted(batch)
		cancel()
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
}

// notSent says why a claimed delivery is not sent, its schedule ended:
// since it was made, its webhook was disabled, or (unless an operator
// asked) no longer takes its event's type; it gets no new such event
// either.
func notSent(d *store.Claimed) error {
	switch {
	case !d.Webhook.Enabled:
		return errors.New("not sent: the webhook is disabled")
	case !d.Manual && d.EventType != store.EventWebhookTest && !d.Webhook.Subscribes(d.EventType):
		return fmt.Errorf("not sent: the webhook no longer takes %s events", d.EventType)
	}
	return nil
}

// nextAttempt is when the attempt after failed delivery d is due, or nil
// when the schedule has ended (or d was an operator's retry).
func nextAttempt(d *store.Delivery, failedAt time.Time) *time.Time {
	if d.Manual || d.Attempt < 1 || d.Attempt > len(Schedule) {
		return nil
	}
	next := failedAt.Add(Schedule[d.Attempt-1])
	return &next
}

func outcome(o *store.Outcome, status int, kept []byte) {
	o.Status = status
	o.Response = string(bytes.ToValidUTF8(kept, []byte("\uFFFD")))
	switch {
	case status >= 200 && status < 300:
		o.Succeeded = true
	case status >= 300 && status < 400:
		o.Error = fmt.Sprintf("the receiver answered %d, a redirect, which is not followed: a webhook's URL must answer 2xx itself", status)
	default:
		o.Error = fmt.Sprintf("the receiver answered %d, not 2xx", status)
	}
}

// maxSigners bounds the signers and senders kept; past it, the least
// recently used is made again when needed.
const maxSigners = 1024

// signer is the signer of a secret, made once.
func (e *Engine) signer(secret string) (*signer, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return bounded.GetOrAdd(e.signers, secret, func() (*signer, error) { return newSigner(secret) })
}

// describe words an attempt's failure for the delivery log.
func (e *Engine) describe(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer within %s of the attempt's claim: %v", e.timeout, err)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("the receiver closed the connection without a whole answer: %v", err)
	}
	return err.Error()
}
