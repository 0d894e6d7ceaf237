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
	// OldestDue is when the longest-waiting due delivery was due, and
	// OldestPendingEvent when the event of the oldest pending delivery was
	// recorded (zero when there is none): the first grows while nothing
	// sends, the second while a receiver fails.
	OldestDue, OldestPendingEvent time.Time
	// Healthy, Failing and Disabled count the webhooks: enabled with no
	// failure since their last success, enabled and failing, disabled
	// (by the operator or after failing too long).
	Healthy, Failing, Disabled int64
	// EventsRecorded is how many events the store has recorded since it
	// was made (its sequence, the same on every instance of one database).
	EventsRecorded int64
}

// QueueReader is a store that reports its webhook queue.
type QueueReader interface {
	// WebhookQueue reads the queue as of now. Its cost grows with the
	// pending deliveries (not with those kept), so callers give it a
	// deadline.
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
