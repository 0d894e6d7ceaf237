package events_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/events"
	"petstore/store"
)

// outboxReads is a real store that counts the reads of the outbox and
// signals each of the engine's polls.
type outboxReads struct {
	store.Store
	reads atomic.Int64
	polls chan struct{}
}

func (o *outboxReads) Events(ctx context.Context, f store.EventFilter) ([]store.Event, error) {
	o.reads.Add(1)
	return o.Store.Events(ctx, f)
}

func (o *outboxReads) FanOut(ctx context.Context, now time.Time, limit int) (int, error) {
	n, err := o.Store.FanOut(ctx, now, limit)
	select {
	case o.polls <- struct{}{}:
	default:
	}
	return n, err
}

// The hub reads the outbox only while a stream is open: not at the
// engine's start, however many events are kept, and not while idle. A
// subscription that finds it idle starts from the newest event, so it
// gets what is written from then on and not what was written while no
// one listened (a stream reads that from the store after subscribing).
func TestHubReadsOnlyWhileStreamsAreOpen(t *testing.T) {
	db := domaintest.OpenStore(t)
	o := &outboxReads{Store: db, polls: make(chan struct{})}
	category := func(name string) {
		t.Helper()
		if err := db.CreateCategory(ctx, &store.Category{Name: name}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Enough of the engine's polls for the hub, which ticks as often,
	// to have ticked too.
	polls := func() {
		for range 5 {
			<-o.polls
		}
	}
	next := func(sub *events.Subscription) string {
		t.Helper()
		select {
		case e, ok := <-sub.C:
			if !ok {
				t.Fatal("the subscription ended")
			}
			return string(e.Data)
		case <-time.After(30 * time.Second):
			t.Fatal("no event in 30 s")
			return ""
		}
	}
	for i := range 3 {
		category("kept " + string(rune('a'+i)))
	}
	e := start(t, o, nil, events.Policy{})
	polls()
	if n := o.reads.Load(); n != 0 {
		t.Errorf("the hub read the outbox %d times as it started, with no stream open", n)
	}

	sub, err := e.Hub().Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	category("live")
	if got := next(sub); !strings.Contains(got, `"live"`) {
		t.Errorf("first event fed to a new subscription: %s, want the category created after it", got)
	}
	sub.Close()
	polls()
	idle := o.reads.Load()
	category("while idle")
	polls()
	if n := o.reads.Load() - idle; n != 0 {
		t.Errorf("the hub read the outbox %d times with no stream open", n)
	}

	sub, err = e.Hub().Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	category("after")
	if got := next(sub); !strings.Contains(got, `"after"`) {
		t.Errorf("first event fed to a subscription after an idle time: %s, want the category created after it", got)
	}
}
