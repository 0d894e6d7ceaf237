package postgres

import (
	"context"
	"encoding/json"
	"time"

	"petstore/store"
)

// WebhookQueue reads the pending deliveries, the event of the oldest, and
// the webhooks, in one statement's snapshot. A delivery under an
// attempt's lease is pending but not due.
func (db *DB) WebhookQueue(ctx context.Context, now time.Time) (store.WebhookQueue, error) {
	var q store.WebhookQueue
	var oldestDue, oldestEvent *time.Time
	var hooks [][]byte
	err := db.pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM deliveries WHERE state = 'pending'),
			(SELECT count(*) FROM deliveries WHERE state = 'pending' AND scheduled_at <= $1 AND `+leaseEnded+`),
			(SELECT min(scheduled_at) FROM deliveries WHERE state = 'pending' AND scheduled_at <= $1 AND `+leaseEnded+`
				AND webhook_id NOT IN (SELECT webhook_id FROM deliveries WHERE state = 'pending' AND NOT `+leaseEnded+` GROUP BY webhook_id HAVING count(*) >= $2)),
			(SELECT min(e.created_at) FROM deliveries d JOIN events e ON e.tx = d.event_tx AND e.seq = d.event_seq WHERE d.state = 'pending'),
			COALESCE(pg_sequence_last_value(pg_get_serial_sequence('events', 'seq')::regclass), 0),
			ARRAY(SELECT value FROM webhooks ORDER BY id)`, now, store.MaxInFlightPerWebhook).
		Scan(&q.Pending, &q.Due, &oldestDue, &oldestEvent, &q.EventsRecorded, &hooks)
	if err != nil {
		return q, err
	}
	if oldestDue != nil {
		q.OldestDue = oldestDue.UTC()
	}
	if oldestEvent != nil {
		q.OldestPendingEvent = oldestEvent.UTC()
	}
	for _, v := range hooks {
		var w store.Webhook
		if err := json.Unmarshal(v, &w); err != nil {
			return q, err
		}
		q.CountWebhook(&w)
	}
	return q, nil
}
