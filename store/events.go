package store

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The event types. Each write that changes an entity records its events in
// the same transaction (the outbox); the types say what happened.
const (
	EventPetCreated      = "pet.created"
	EventPetUpdated      = "pet.updated"
	EventPetDeleted      = "pet.deleted"
	EventCategoryCreated = "category.created"
	EventCategoryUpdated = "category.updated"
	EventCategoryDeleted = "category.deleted"
	EventOrderPlaced     = "order.placed"
	EventOrderUpdated    = "order.updated"
	EventOrderCompleted  = "order.completed"
	EventOrderCancelled  = "order.cancelled"
	EventInventory       = "inventory.updated"

	EventDomainAdded    = "domain.added"
	EventDomainOwned    = "domain.owned"
	EventDomainVerified = "domain.verified"
	EventDomainMoved    = "domain.moved"
	EventDomainRemoved  = "domain.removed"

	EventCertIssued   = "certificate.issued"
	EventCertRenewed  = "certificate.renewed"
	EventCertFailed   = "certificate.failed"
	EventCertExpiring = "certificate.expiring"
	EventCertExpired  = "certificate.expired"

	EventAPIKeyCreated   = "apikey.created"
	EventAPIKeyRevoked   = "apikey.revoked"
	EventWebhookDisabled = "webhook.disabled"
	EventWebhookTest     = "webhook.test"

	EventStoreRestored = "store.restored"
)

// EventTypes lists every type a subscription may name, in the order the
// documents list them.
var EventTypes = []string{
	EventPetCreated, EventPetUpdated, EventPetDeleted,
	EventCategoryCreated, EventCategoryUpdated, EventCategoryDeleted,
	EventOrderPlaced, EventOrderUpdated, EventOrderCompleted, EventOrderCancelled,
	EventInventory,
	EventDomainAdded, EventDomainOwned, EventDomainVerified, EventDomainMoved, EventDomainRemoved,
	EventCertIssued, EventCertRenewed, EventCertFailed, EventCertExpiring, EventCertExpired,
	EventAPIKeyCreated, EventAPIKeyRevoked, EventWebhookDisabled, EventWebhookTest,
	EventStoreRestored,
}

// PublicEventKinds are the kinds (the part of a type before the dot) that
// GET /events carries; store.restored says which of those were rolled back.
var PublicEventKinds = []string{"pet", "category", "order", "inventory", "store"}

// AdminEventKinds are the kinds GET /admin/events carries.
var AdminEventKinds = []string{"domain", "certificate", "apikey", "webhook"}

// EventKind is the part of an event type before its dot.
func EventKind(typ string) string {
	kind, _, _ := strings.Cut(typ, ".")
	return kind
}

// EventID orders events by (Tx, Seq): on PostgreSQL the writing
// transaction's id and a sequence; on bbolt, whose writes commit one at a
// time, 0 and the file's counter. Its text form sorts as the pair does.
type EventID struct {
	Tx, Seq uint64
}

// String is the id as the API shows it.
func (id EventID) String() string {
	var buf [36]byte
	return string(id.Append(buf[:0]))
}

// Append appends "evt_" and Tx and Seq in 16 hexadecimal digits each.
func (id EventID) Append(b []byte) []byte {
	b = append(b, "evt_"...)
	for _, v := range [2]uint64{id.Tx, id.Seq} {
		for shift := 60; shift >= 0; shift -= 4 {
			b = append(b, hexDigits[v>>uint(shift)&0xF])
		}
	}
	return b
}

// IsZero reports whether id is the cursor before every event.
func (id EventID) IsZero() bool { return id == EventID{} }

func (id EventID) Less(o EventID) bool {
	return id.Tx < o.Tx || id.Tx == o.Tx && id.Seq < o.Seq
}

// ParseEventID reads an id in its API form.
func ParseEventID(s string) (EventID, error) {
	hexPart, ok := strings.CutPrefix(s, "evt_")
	if _, err := hex.DecodeString(hexPart); !ok || len(hexPart) != 32 || err != nil {
		return EventID{}, Errorf(EINVALID, "%q is not an event id: one is \"evt_\" and 32 hexadecimal digits", s)
	}
	tx, _ := strconv.ParseUint(hexPart[:16], 16, 64)
	seq, _ := strconv.ParseUint(hexPart[16:], 16, 64)
	return EventID{tx, seq}, nil
}

// Event is one change, as webhooks and the streams deliver it.
type Event struct {
	ID        EventID
	Type      string
	CreatedAt time.Time
	// Data is the resource as the API answers it, or {"id": …} for a
	// deletion.
	Data json.RawMessage
}

// AppendJSON appends the event's envelope. The bytes are the same on every
// read, so a retried delivery is signed over the same body.
func (e *Event) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":"`...)
	b = e.ID.Append(b)
	b = append(b, `","type":`...)
	b = strconv.AppendQuote(b, e.Type)
	b = append(b, `,"createdAt":"`...)
	b = e.CreatedAt.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","data":`...)
	b = append(b, e.Data...)
	return append(b, '}')
}

// EventFilter selects events for Events: those after After (the zero id:
// from the oldest) of the given kinds (none: every kind), at most Limit.
type EventFilter struct {
	After EventID
	Kinds []string
	Limit int
}

// Matches reports whether an event of type typ passes the kinds filter.
func (f EventFilter) Matches(typ string) bool {
	return len(f.Kinds) == 0 || slices.Contains(f.Kinds, EventKind(typ))
}

// EventGone is the answer to a cursor older than the oldest retained event.
func EventGone(after, oldest EventID) *Error {
	return Errorf(EGONE, "events after %s are no longer kept; the oldest available is %s: start from it, or from the start with no cursor", after, oldest)
}

// NewEvent builds the pending event of a change: data is encoded as the
// API answers it.
func NewEvent(typ string, data any) (PendingEvent, error) {
	var raw []byte
	var err error
	switch v := data.(type) {
	case *Pet:
		raw = v.AppendJSON(nil)
	case *InventoryItem:
		raw = v.AppendJSON(nil)
	case *Order:
		raw, err = v.AppendJSON(nil)
	case json.RawMessage:
		raw = v
	default:
		raw, err = json.Marshal(data)
	}
	return PendingEvent{Type: typ, Data: raw}, err
}

// DeletedData is the data of a deletion event: the id of what is gone.
func DeletedData(id int64) json.RawMessage {
	return append(strconv.AppendInt([]byte(`{"id":`), id, 10), '}')
}

// PendingEvent is an event a write records; the store gives it its id and
// time when it writes it.
type PendingEvent struct {
	Type string
	Data json.RawMessage
}

// OrderUpdateEvent is the type of the event of an order's update.
func OrderUpdateEvent(old, updated *Order) string {
	if updated.Complete && !old.Complete {
		return EventOrderCompleted
	}
	return EventOrderUpdated
}

// DomainEvents lists the events of a domain's change from old to updated
// (old nil: added). A change that is neither a new state of the domain nor
// of its certificate (a DNS check that found the same) has none.
func DomainEvents(old, updated *Domain) []string {
	if old == nil {
		return []string{EventDomainAdded}
	}
	var out []string
	if t, ok := domainStateEvents[updated.State]; ok && old.State != updated.State {
		out = append(out, t)
	}
	if t := certificateEvent(old.Certificate, updated.Certificate); t != "" {
		out = append(out, t)
	}
	return out
}

// The events of a domain's new states, and of its certificate's lifecycle.
var (
	domainStateEvents = map[string]string{DomainOwned: EventDomainOwned, DomainVerified: EventDomainVerified, DomainMoved: EventDomainMoved}
	certKindEvents    = map[string]string{CertEventObtained: EventCertIssued, CertEventRenewed: EventCertRenewed,
		CertEventFailed: EventCertFailed, CertEventExpiring: EventCertExpiring}
)

// certificateEvent is the event of a certificate's change, if it has one:
// a lifecycle event newly recorded, or the state becoming expired.
func certificateEvent(old, updated Certificate) string {
	if n := len(updated.Events); n > 0 {
		latest := updated.Events[n-1]
		isNew := len(old.Events) == 0
		if !isNew {
			prev := old.Events[len(old.Events)-1]
			isNew = !latest.At.Equal(prev.At) || latest.Kind != prev.Kind
		}
		if t, ok := certKindEvents[latest.Kind]; isNew && ok {
			return t
		}
	}
	if updated.State == CertExpired && old.State != CertExpired {
		return EventCertExpired
	}
	return ""
}

// Webhook is an endpoint that events are delivered to.
type Webhook struct {
	ID             int64      `json:"id"`
	URL            string     `json:"url"`
	Events         []string   `json:"events"`
	Description    string     `json:"description"`
	Enabled        bool       `json:"enabled"`
	CreatedAt      time.Time  `json:"createdAt"`
	DisabledReason string     `json:"disabledReason,omitempty"`
	FailingSince   *time.Time `json:"failingSince,omitempty"`
	// Secret signs deliveries (Standard Webhooks' whsec_ form); the API
	// shows it only when it is made.
	Secret string `json:"secret,omitempty"`
	// PreviousSecret, which a rotation replaced, signs too until
	// PreviousSecretExpiresAt, so that a receiver not yet given the new
	// one keeps verifying. The API never shows it.
	PreviousSecret          string     `json:"previousSecret,omitempty"`
	PreviousSecretExpiresAt *time.Time `json:"previousSecretExpiresAt,omitempty"`
}

// Subscribes reports whether the webhook takes events of type typ.
func (w *Webhook) Subscribes(typ string) bool {
	return slices.Contains(w.Events, "*") || slices.Contains(w.Events, typ)
}

// Delivery states.
const (
	DeliveryPending   = "pending"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
)

// Delivery is one attempt to deliver one event to one webhook.
type Delivery struct {
	ID        int64   `json:"id"`
	WebhookID int64   `json:"webhookId"`
	EventID   EventID `json:"-"`
	EventType string  `json:"eventType"`
	Attempt   int     `json:"attempt"`
	Manual    bool    `json:"manual,omitempty"`
	State     string  `json:"state"`
	// ScheduledAt is when the attempt is due.
	ScheduledAt   time.Time  `json:"scheduledAt"`
	AttemptedAt   *time.Time `json:"attemptedAt,omitempty"`
	Status        int        `json:"status,omitempty"`
	Error         string     `json:"error,omitempty"`
	DurationMS    int64      `json:"durationMs,omitempty"`
	Response      string     `json:"response,omitempty"`
	NextAttemptAt *time.Time `json:"nextAttemptAt,omitempty"`
}

// Claimed is a delivery due now, with what its attempt needs.
type Claimed struct {
	Delivery
	Event   Event
	Webhook Webhook
}

// Outcome is what an attempt found.
type Outcome struct {
	AttemptedAt time.Time
	Status      int
	Error       string
	Duration    time.Duration
	Response    string
	Succeeded   bool
	// NotSent: nothing was sent (the webhook disabled, or no longer taking
	// the event's type), which says nothing of the receiver.
	NotSent bool
	// Next is when the next attempt is due; nil for none (success, or the
	// schedule's end).
	Next *time.Time
	// Disable disables the webhook, with this reason, and records
	// webhook.disabled for the others.
	Disable string
}

// Finished is an attempt and its outcome, to be recorded.
type Finished struct {
	Claimed *Claimed
	Outcome Outcome
}

// Events is the outbox, the webhooks and their deliveries.
type Events interface {
	// Events lists the events that f selects, oldest first; a cursor never
	// passes an event that commits later.
	Events(ctx context.Context, f EventFilter) ([]Event, error)
	// OldestEvent is the oldest event kept (the zero id when none is).
	OldestEvent(ctx context.Context) (EventID, error)
	// NewestEvent is the newest event that Events lists (the zero id when
	// none is): every event listed later comes after it.
	NewestEvent(ctx context.Context) (EventID, error)
	// EventCursor is the id in this store of a cursor a client gives:
	// itself, but where a move numbered the events again (moved.go).
	EventCursor(ctx context.Context, id EventID) (EventID, error)
	// RecordEvent records an event of no entity's change (webhook.test
	// goes to one webhook only: to).
	RecordEvent(ctx context.Context, e PendingEvent, to int64, key *IdempotentWrite) (Event, error)
	// PruneEvents deletes events and deliveries made before t.
	PruneEvents(ctx context.Context, t time.Time) (int, error)

	CreateWebhook(ctx context.Context, w *Webhook, key *IdempotentWrite) error
	// Webhook gives the webhook with its secret; Public hides it.
	Webhook(ctx context.Context, id int64) (Webhook, error)
	Webhooks(ctx context.Context, p Page) ([]Webhook, int64, error)
	UpdateWebhook(ctx context.Context, id int64, fn func(*Webhook) error, key *IdempotentWrite) (Webhook, error)
	DeleteWebhook(ctx context.Context, id int64) error

	// FanOut makes the first pending delivery of each event recorded
	// since the last FanOut, for each enabled webhook that subscribes to
	// it, due at now; it reports how many events it read.
	FanOut(ctx context.Context, now time.Time, limit int) (int, error)
	// ClaimDeliveries leases up to limit deliveries due at now, a webhook's
	// no more than MaxInFlightPerWebhook with its attempts in flight (busy
	// lists one per attempt), for lease: no other instance attempts them
	// before it ends on the store's clock (the database's), never on now.
	ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, busy []int64, limit int) ([]Claimed, error)
	// FinishDeliveries records the outcomes of attempts, with the next
	// attempts' pending deliveries, in one transaction; a delivery or
	// webhook deleted meanwhile is skipped. Until it succeeds the
	// deliveries stay leased, and are attempted again once their leases
	// end (at least once).
	FinishDeliveries(ctx context.Context, done []Finished) error
	// Deliveries lists a webhook's deliveries, newest first; After is a
	// delivery id (0: the newest).
	Deliveries(ctx context.Context, webhookID int64, p Page) ([]Delivery, int64, error)
	// RetryDelivery makes a new pending delivery of the event of delivery
	// id, due at now.
	RetryDelivery(ctx context.Context, webhookID, id int64, now time.Time, key *IdempotentWrite) (Delivery, error)

	QueueReader
}

// DomainRemovedData is the data of domain.removed: the name, a domain's id.
func DomainRemovedData(name string) json.RawMessage {
	data, _ := json.Marshal(map[string]string{"name": name})
	return data
}
