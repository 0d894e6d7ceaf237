package events

import (
	"context"
	"sync"
	"time"

	"petstore/store"
)

// Hub reads the outbox as it grows, one reader for all this instance's
// streams, and passes each event to their subscriptions. With no stream it
// reads nothing; a subscription finding it idle starts it from the newest
// event.
type Hub struct {
	store Store
	poll  time.Duration

	// reading is held by whoever reads the outbox for the hub (forward, or a
	// Subscribe finding it idle); it guards last and current.
	reading sync.Mutex
	// last is the newest event the hub has read.
	last store.EventID
	// current: last follows the outbox; false from a forward that found no
	// subscriber until the next Subscribe.
	current bool

	mu   sync.Mutex
	subs map[*Subscription]struct{}
}

// Subscription is one stream's feed of new events.
type Subscription struct {
	// C carries events in id order; it is closed when the subscriber fell too
	// far behind (the client resumes from its last id) or the hub stopped.
	C    chan store.Event
	hub  *Hub
	once sync.Once
}

// subscriptionBuffer is how many events a stream may leave unread before
// it is dropped.
const subscriptionBuffer = 1024

// Subscribe starts a feed of the events after the newest as of the call.
// The subscriber then reads what it missed from the store and skips ids
// the feed repeats, so nothing falls between the two.
func (h *Hub) Subscribe(ctx context.Context) (*Subscription, error) {
	h.reading.Lock()
	defer h.reading.Unlock()
	if !h.current {
		last, err := h.store.NewestEvent(ctx)
		if err != nil {
			return nil, err
		}
		h.last, h.current = last, true
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
	store.EveryTick(ctx, h.poll, func() { h.forward(ctx) })
}

// forward passes the events after h.last to every subscriber a page at a
// time; one that cannot take one at once is dropped.
func (h *Hub) forward(ctx context.Context) {
	h.reading.Lock()
	defer h.reading.Unlock()
	for {
		h.mu.Lock()
		idle := len(h.subs) == 0
		h.mu.Unlock()
		if idle {
			h.current = false
			return
		}
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
