package store

import (
	"context"
	"time"
)

// WebhookQueue is the state of the webhooks' deliveries at one moment, as
// /metrics reports it for alerts.
type WebhookQueue struct {
	// Pending is the deliveries not yet finished: due now, or waiting for
	// their retry; Due those of them whose time has come.
	Pending, Due int64
	// OldestDue is when the longest-waiting due delivery was due (it grows
	// while nothing sends), leaving out those of a webhook with every
	// attempt slot taken: they wait for their own receiver, which a hung
	// one makes long. OldestPendingEvent is when the event of the oldest
	// pending delivery was recorded (it grows while a receiver fails).
	OldestDue, OldestPendingEvent time.Time
	// Healthy, Failing and Disabled count the webhooks.
	Healthy, Failing, Disabled int64
	// EventsRecorded is how many events the store has recorded since it
	// was made.
	EventsRecorded int64
}

// QueueReader is a store that reports its webhook queue.
type QueueReader interface {
	// WebhookQueue reads the queue as of now, leases as claims judge them.
	// Its cost grows with the pending deliveries, so callers give it a deadline.
	WebhookQueue(ctx context.Context, now time.Time) (WebhookQueue, error)
}

// CountWebhook adds w to the webhook counts of q.
func (q *WebhookQueue) CountWebhook(w *Webhook) {
	switch {
	case !w.Enabled:
		q.Disabled++
	case w.FailingSince != nil:
		q.Failing++
	default:
		q.Healthy++
	}
}
