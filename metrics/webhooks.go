package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"petstore/store"
)

var (
	queueUpDesc       = desc("petstore_webhook_queue_up", "1 when this scrape read the webhook queue from the store within its time limit; 0 when the store did not answer in time, and the queue's series are absent.")
	pendingDesc       = desc("petstore_webhook_deliveries_pending", "Webhook deliveries not finished: due now, or waiting for their retry.")
	dueDesc           = desc("petstore_webhook_deliveries_due", "Webhook deliveries whose time has come and that no attempt has taken yet.")
	oldestDueDesc     = desc("petstore_webhook_oldest_due_seconds", "How long the longest-waiting due delivery has waited past its time (0 when none is due), leaving out those of a webhook with every attempt slot taken: it grows while nothing sends.")
	oldestPendingDesc = desc("petstore_webhook_oldest_pending_seconds", "Age of the event of the oldest pending delivery (0 when none is pending): it grows while a receiver fails and its retries wait.")
	webhooksDesc      = desc("petstore_webhooks", "Webhooks by state: healthy (enabled, no failure since the last success), failing (enabled, failing since failingSince), disabled.", "state")
	recordedDesc      = desc("petstore_events_recorded_total", "Events the store has recorded since it was made; every instance of one database reports the same count.")

	fannedOutDesc = desc("petstore_events_fanned_out_total", "Events this instance read from the outbox into webhook deliveries.")
	attemptsDesc  = desc("petstore_webhook_attempts_total", "Webhook delivery attempts this instance made, by outcome: succeeded (2xx), rejected (the receiver answered another status), unreachable (no answer: refused, timed out, not allowed).", "outcome")
	lagDesc       = desc("petstore_webhook_delivery_lag_seconds", "Time from an event's commit to the start of its first delivery attempt, observed as the attempt starts (the receiver's answer time is not in it), for the attempts this instance made.")
)

// WebhookQueue reports the store's webhook queue at scrape time, within
// ReadTimeout; now is the ages' clock.
func WebhookQueue(r store.QueueReader, now func() time.Time) prometheus.Collector {
	var b bounded
	return collector{
		[]*prometheus.Desc{queueUpDesc, pendingDesc, dueDesc, oldestDueDesc, oldestPendingDesc, webhooksDesc, recordedDesc},
		func(s send) {
			now := now()
			var q store.WebhookQueue
			err := b.read(func(ctx context.Context) (err error) {
				q, err = r.WebhookQueue(ctx, now)
				return err
			})
			if err != nil {
				s.gauge(queueUpDesc, 0)
				return
			}
			s.gauge(queueUpDesc, 1)
			s.gauge(pendingDesc, float64(q.Pending))
			s.gauge(dueDesc, float64(q.Due))
			s.gauge(oldestDueDesc, age(now, q.OldestDue))
			s.gauge(oldestPendingDesc, age(now, q.OldestPendingEvent))
			s.gauge(webhooksDesc, float64(q.Healthy), "healthy")
			s.gauge(webhooksDesc, float64(q.Failing), "failing")
			s.gauge(webhooksDesc, float64(q.Disabled), "disabled")
			s.counter(recordedDesc, float64(q.EventsRecorded))
		},
	}
}

// age is the seconds from t to now, 0 for no time or one to come.
func age(now, t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return max(now.Sub(t).Seconds(), 0)
}

// AttemptCounter is the webhook engine's counts as /metrics reads them.
type AttemptCounter interface {
	FannedOut() uint64
	Attempts() (succeeded, rejected, unreachable uint64)
	Lag() (count uint64, sum float64, cumulative map[float64]uint64)
}

// WebhookAttempts reports this instance's engine, from memory: events
// fanned out, attempts by outcome, and the lag to a first attempt.
func WebhookAttempts(c AttemptCounter) prometheus.Collector {
	return collector{[]*prometheus.Desc{fannedOutDesc, attemptsDesc, lagDesc}, func(s send) {
		s.counter(fannedOutDesc, float64(c.FannedOut()))
		ok, rejected, unreachable := c.Attempts()
		s.counter(attemptsDesc, float64(ok), "succeeded")
		s.counter(attemptsDesc, float64(rejected), "rejected")
		s.counter(attemptsDesc, float64(unreachable), "unreachable")
		n, sum, buckets := c.Lag()
		s <- prometheus.MustNewConstHistogram(lagDesc, n, sum, buckets)
	}}
}
