package store

import "time"

// MaxInFlightPerWebhook bounds the attempts one instance makes at once to
// one webhook, so that a slow receiver never holds the others' turn.
const MaxInFlightPerWebhook = 16

// Routes reports whether event e goes to webhook w: an event for one
// webhook (to) to that one only, any other to every subscriber.
func Routes(e *Event, to int64, w *Webhook) bool {
	if !w.Enabled || e.CreatedAt.Before(w.CreatedAt) {
		return false // a webhook gets the events recorded after it was made
	}
	if to != 0 {
		return to == w.ID
	}
	return w.Subscribes(e.Type)
}

// Public is the webhook as the API shows it after it was made: without its
// secrets (when a previous secret still signs, only until when).
func (w Webhook) Public() Webhook {
	w.Secret, w.PreviousSecret = "", ""
	return w
}

// DefaultSecretOverlap is how long a rotated-out secret keeps signing
// when the rotation does not say: long enough for a receiver's deploy.
const DefaultSecretOverlap = 24 * time.Hour

// RotateSecret gives w the signing secret secret at now; the one it
// replaces keeps signing for overlap (none when overlap is 0). A secret
// rotated out earlier is dropped: two secrets sign at most.
func (w *Webhook) RotateSecret(secret string, now time.Time, overlap time.Duration) {
	w.PreviousSecret, w.PreviousSecretExpiresAt = "", nil
	if overlap > 0 && w.Secret != "" {
		until := now.Add(overlap).UTC().Truncate(time.Second)
		w.PreviousSecret, w.PreviousSecretExpiresAt = w.Secret, &until
	}
	w.Secret = secret
}

// ExpirePreviousSecret drops w's previous secret if it has expired at now
// (or, with force, at once): from then on only the current secret signs.
func (w *Webhook) ExpirePreviousSecret(now time.Time, force bool) {
	if force || w.PreviousSecretExpiresAt == nil || !now.Before(*w.PreviousSecretExpiresAt) {
		w.PreviousSecret, w.PreviousSecretExpiresAt = "", nil
	}
}

// SigningSecrets are the secrets w's deliveries are signed with at now,
// space-separated, the current one first (Standard Webhooks' form).
func (w *Webhook) SigningSecrets(now time.Time) string {
	if w.PreviousSecret != "" && w.PreviousSecretExpiresAt != nil && now.Before(*w.PreviousSecretExpiresAt) {
		return w.Secret + " " + w.PreviousSecret
	}
	return w.Secret
}

// ApplyOutcome records an attempt's outcome on its delivery and on its
// webhook's failure record (both stores keep the same rule).
func ApplyOutcome(d *Delivery, w *Webhook, o Outcome) {
	at := o.AttemptedAt.UTC()
	d.AttemptedAt = &at
	d.Status, d.Error, d.Response = o.Status, o.Error, o.Response
	d.DurationMS = o.Duration.Milliseconds()
	if o.Succeeded {
		d.State = DeliverySucceeded
		w.FailingSince = nil
	} else {
		d.State = DeliveryFailed
		if w.FailingSince == nil && !o.NotSent {
			w.FailingSince = &at
		}
	}
	if o.Next != nil {
		next := o.Next.UTC()
		d.NextAttemptAt = &next
	}
	if o.Disable != "" {
		w.Enabled = false
		w.DisabledReason = o.Disable
	}
}

// NextAttempt is the pending delivery that follows failed delivery d.
func NextAttempt(d *Delivery, at time.Time) Delivery {
	return Delivery{
		WebhookID: d.WebhookID, EventID: d.EventID, EventType: d.EventType,
		Attempt: d.Attempt + 1, State: DeliveryPending, ScheduledAt: at.UTC(),
	}
}

// ManualRetry is the pending delivery an operator's retry of d makes: one
// attempt, which is not retried on failure.
func ManualRetry(d *Delivery, at time.Time) Delivery {
	r := NextAttempt(d, at)
	r.Attempt = 1
	r.Manual = true
	return r
}

// FinishAttempt records outcome o on pending delivery d and its webhook w
// with a store's writes: put (a new delivery when its ID is 0) the next
// attempt when o has one; endSchedule when d is an operator's retry that
// succeeded (the scheduled attempt still pending would send the event
// again); disabled (webhook.disabled) when o disables w.
func FinishAttempt(d *Delivery, w *Webhook, o Outcome, put, endSchedule func(*Delivery) error, disabled func(Webhook) error) error {
	wasEnabled := w.Enabled
	ApplyOutcome(d, w, o)
	if err := put(d); err != nil {
		return err
	}
	if o.Next != nil {
		next := NextAttempt(d, *o.Next)
		if err := put(&next); err != nil {
			return err
		}
	}
	if d.Manual && o.Succeeded {
		if err := endSchedule(d); err != nil {
			return err
		}
	}
	if o.Disable != "" && wasEnabled {
		return disabled(w.Public())
	}
	return nil
}

// InSchedule reports whether pending delivery p is a scheduled attempt of
// the event and webhook of d (an operator's other retries are not).
func InSchedule(p, d *Delivery) bool {
	return p.ID != d.ID && p.WebhookID == d.WebhookID && p.EventID == d.EventID &&
		p.State == DeliveryPending && !p.Manual
}

// EventPruned answers a retry of a delivery whose event is no longer kept.
func EventPruned(id EventID) *Error {
	return Errorf(EGONE, "event %s is older than the events kept, so it cannot be delivered again", id)
}

// WebhookChanged reports whether an outcome changed the webhook's record,
// which most successes do not.
func WebhookChanged(before, after *Webhook) bool {
	return before.Enabled != after.Enabled || before.DisabledReason != after.DisabledReason ||
		(before.FailingSince == nil) != (after.FailingSince == nil)
}
