package metrics

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// ReadTimeout bounds each store read of a scrape: a stopped database costs
// a scrape this long at most, within Prometheus's default timeout, and the
// scrape still answers with every other series.
const ReadTimeout = 3 * time.Second

// errBusy answers a scrape while an earlier one's read is still on its
// way, so that reads never pile up on a slow store.
var errBusy = errors.New("metrics: the previous scrape's read of the store has not ended")

// bounded is one kind of read of the store at scrape time: at most one
// at a time, each within ReadTimeout.
type bounded struct{ busy atomic.Bool }

// read runs fn with a context ending after ReadTimeout and returns when
// fn does or time is up (fn goes on by itself, and reads get errBusy
// until it ends).
func (b *bounded) read(fn func(ctx context.Context) error) error {
	if !b.busy.CompareAndSwap(false, true) {
		return errBusy
	}
	ctx, cancel := context.WithTimeout(context.Background(), ReadTimeout)
	done := make(chan error, 1)
	go func() {
		err := fn(ctx)
		// Free before the answer: a scrape right after must not find it busy.
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
