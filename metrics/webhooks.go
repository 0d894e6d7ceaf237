package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"petstore/store"
)

var (
	queueUpDesc = prometheus.NewDesc("petstore_webhook_queue_up",
		"1 when this scrape read the webhook queue from the store within its time limit; 0 when the store did not answer in time, and the queue's series are absent.", nil, nil)
	pendingDesc = prometheus.NewDesc("petstore_webhook_deliveries_pending",
		"Webhook deliveries not finished: due now, or waiting for their retry.", nil, nil)
	dueDesc = prometheus.NewDesc("petstore_webhook_deliveries_due",
		"Webhook deliveries whose time has come and that no attempt has taken yet.", nil, nil)
	oldestDueDesc = prometheus.NewDesc("petstore_webhook_oldest_due_seconds",
		"How long the longest-waiting due delivery has waited past its time (0 when none is due): it grows while nothing sends.", nil, nil)
	oldestPendingDesc = prometheus.NewDesc("petstore_webhook_oldest_pending_seconds",
		"Age of the event of the oldest pending delivery (0 when none is pending): it grows while a receiver fails and its retries wait.", nil, nil)
	webhooksDesc = prometheus.NewDesc("petstore_webhooks",
		"Webhooks by state: healthy (enabled, no failure since the last success), failing (enabled, failing since failingSince), disabled.", []string{"state"}, nil)
	recordedDesc = prometheus.NewDesc("petstore_events_recorded_total",
		"Events the store has recorded since it was made; every instance of one database reports the same count.", nil, nil)

	fannedOutDesc = prometheus.NewDesc("petstore_events_fanned_out_total",
		"Events this instance read from the outbox into webhook deliveries.", nil, nil)
	attemptsDesc = prometheus.NewDesc("petstore_webhook_attempts_total",
		"Webhook delivery attempts this instance made, by outcome: succeeded (2xx), rejected (the receiver answered another status), unreachable (no answer: refused, timed out, not allowed).", []string{"outcome"}, nil)
	lagDesc = prometheus.NewDesc("petstore_webhook_delivery_lag_seconds",
		"Time from an event's commit to its first delivery attempt, for the attempts this instance made.", nil, nil)
)

// WebhookQueue reports the store's webhook queue, read at scrape time
// within ReadTimeout; now is the clock of the ages.
func WebhookQueue(q store.QueueReader, now func() time.Time) prometheus.Collector {
	return &queueCollector{q: q, now: now}
}

type queueCollector struct {
	q   store.QueueReader
	now func() time.Time
	bounded
}

func (*queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{queueUpDesc, pendingDesc, dueDesc, oldestDueDesc, oldestPendingDesc, webhooksDesc, recordedDesc} {
		ch <- d
	}
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	var q store.WebhookQueue
	err := c.read(func(ctx context.Context) error {
		var err error
		q, err = c.q.WebhookQueue(ctx, now)
		return err
	})
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if err != nil {
		gauge(queueUpDesc, 0)
		return
	}
	gauge(queueUpDesc, 1)
	gauge(pendingDesc, float64(q.Pending))
	gauge(dueDesc, float64(q.Due))
	gauge(oldestDueDesc, age(now, q.OldestDue))
	gauge(oldestPendingDesc, age(now, q.OldestPendingEvent))
	gauge(webhooksDesc, float64(q.Healthy), "healthy")
	gauge(webhooksDesc, float64(q.Failing), "failing")
	gauge(webhooksDesc, float64(q.Disabled), "disabled")
	ch <- prometheus.MustNewConstMetric(recordedDesc, prometheus.CounterValue, float64(q.EventsRecorded))
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

// WebhookAttempts reports what this instance's webhook engine did: the
// events it fanned out, its attempts by outcome, and the lag from an
// event to its first attempt. It reads memory only.
func WebhookAttempts(c AttemptCounter) prometheus.Collector { return attempts{c} }

type attempts struct{ c AttemptCounter }

func (attempts) Describe(ch chan<- *prometheus.Desc) {
	ch <- fannedOutDesc
	ch <- attemptsDesc
	ch <- lagDesc
}

func (a attempts) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(fannedOutDesc, prometheus.CounterValue, float64(a.c.FannedOut()))
	ok, rejected, unreachable := a.c.Attempts()
	ch <- prometheus.MustNewConstMetric(attemptsDesc, prometheus.CounterValue, float64(ok), "succeeded")
	ch <- prometheus.MustNewConstMetric(attemptsDesc, prometheus.CounterValue, float64(rejected), "rejected")
	ch <- prometheus.MustNewConstMetric(attemptsDesc, prometheus.CounterValue, float64(unreachable), "unreachable")
	n, sum, buckets := a.c.Lag()
	ch <- prometheus.MustNewConstHistogram(lagDesc, n, sum, buckets)
}
