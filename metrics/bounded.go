package metrics

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// ReadTimeout bounds each read of the store a scrape makes: a slow or
// stopped database costs a scrape this long at most, well within
// Prometheus's default scrape timeout, and the scrape still answers
// with every other series.
const ReadTimeout = 3 * time.Second

// errBusy is the answer of a scrape that comes while the read of an
// earlier one is still on its way: reads never pile up on a slow store.
var errBusy = errors.New("metrics: the previous scrape's read of the store has not ended")

// bounded is one kind of read of the store at scrape time: at most one
// at a time, each within ReadTimeout.
type bounded struct{ busy atomic.Bool }

// read runs fn with a context that ends after ReadTimeout, and returns
// when fn does or when the time is up, whichever comes first (fn goes on
// by itself then, and a read before it ends gets errBusy).
func (b *bounded) read(fn func(ctx context.Context) error) error {
	if !b.busy.CompareAndSwap(false, true) {
		return errBusy
	}
	ctx, cancel := context.WithTimeout(context.Background(), ReadTimeout)
	done := make(chan error, 1)
	go func() {
		err := fn(ctx)
		// Free before the answer: a scrape right after this one's must
		// not find the read still busy.
		b.busy.Store(false)
		done <- err
		cancel()
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// fn's end cancels ctx too.
		select {
		case err := <-done:
			return err
		default:
			return ctx.Err()
		}
	}
}
