package events

import (
	"context"
	"sync"
	"time"

	"petstore/store"
)

// Hub reads the outbox as it grows (one reader for every stream of this
// instance, whichever instance wrote the events) and passes each event on
// to the streams' subscriptions.
type Hub struct {
	store Store
	poll  time.Duration

	mu   sync.Mutex
	subs map[*Subscription]struct{}
	// last is the newest event the hub has read.
	last  store.EventID
	ready chan struct{}
}

// Subscription is one stream's feed of new events.
type Subscription struct {
	// C carries events in id order. It is closed when the subscriber fell
	// too far behind (the stream ends; the client resumes from its last id)
	// or the hub stopped.
	C    chan store.Event
	hub  *Hub
	once sync.Once
}

// subscriptionBuffer is how many events a stream may have unread before it
// is dropped.
const subscriptionBuffer = 1024

func newHub(s Store, poll time.Duration) *Hub {
	return &Hub{store: s, poll: poll, subs: map[*Subscription]struct{}{}, ready: make(chan struct{})}
}

// Subscribe starts a feed of the events read from now on. The subscriber
// reads what it missed from the store after subscribing, and skips what
// the feed repeats (ids it has passed): then nothing falls between the two.
// It waits for the hub to have read up to the outbox's end once.
func (h *Hub) Subscribe(ctx context.Context) (*Subscription, error) {
	select {
	case <-h.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s := &Subscription{C: make(chan store.Event, subscriptionBuffer), hub: h}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s, nil
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.hub.mu.Lock()
	s.hub.drop(s)
	s.hub.mu.Unlock()
}

// drop ends s; h.mu is held.
func (h *Hub) drop(s *Subscription) {
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		s.once.Do(func() { close(s.C) })
	}
}

func (h *Hub) run(ctx context.Context) {
	defer func() {
		h.mu.Lock()
		for s := range h.subs {
			h.drop(s)
		}
		h.mu.Unlock()
	}()
	// The feed starts at the outbox's end: subscribers read what came
	// before from the store.
	for {
		es, err := h.store.Events(ctx, store.EventFilter{After: h.last, Limit: store.MaxPageSize})
		if err == nil && len(es) > 0 {
			h.last = es[len(es)-1].ID
			if len(es) == store.MaxPageSize {
				continue
			}
		}
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(h.poll):
		}
	}
	close(h.ready)
	store.EveryTick(ctx, h.poll, func() { h.forward(ctx) })
}

// forward passes the outbox's events after h.last to every subscriber, a
// page at a time, until it has none more; a subscriber that cannot take
// one at once is dropped.
func (h *Hub) forward(ctx context.Context) {
	for {
		es, err := h.store.Events(ctx, store.EventFilter{After: h.last, Limit: store.MaxPageSize})
		if err != nil || len(es) == 0 {
			return
		}
		h.last = es[len(es)-1].ID
		h.mu.Lock()
		for s := range h.subs {
		send:
			for _, e := range es {
				select {
				case s.C <- e:
				default:
					h.drop(s)
					break send
				}
			}
		}
		h.mu.Unlock()
		if len(es) < store.MaxPageSize {
			return
		}
	}
}
