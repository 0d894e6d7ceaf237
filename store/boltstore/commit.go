package boltstore

import (
	"cmp"
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"sync"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// writeReq is one write waiting for the committer. Requests are pooled,
// their done channel with them, so that a write allocates neither.
type writeReq struct {
	fn func(*bolt.Tx) error
	// appErr is the application error of fn's last run (see write).
	appErr error
	done   chan error
}

var reqPool = sync.Pool{New: func() any { return &writeReq{done: make(chan error, 1)} }}

var errRefused = errors.New("store: a write refused; its transaction is rolled back")

// run runs r's function in tx. An application error (an *Error, or a
// refusal) is kept as r's answer and aborts tx with errRefused, so that
// whatever the function wrote before it refused is never committed.
func (r *writeReq) run(tx *bolt.Tx) error {
	r.appErr = nil // fn may be re-run: only the last run counts
	switch err := r.fn(tx).(type) {
	case nil:
		return nil
	case *store.Error:
		r.appErr = err
	case refusal:
		r.appErr = err.err
	default:
		return err
	}
	return errRefused
}

// outcome is what a write's transaction means for its caller: a refusal
// rolled back is a write answered with its application error (r.appErr).
func outcome(err error) error {
	if err == errRefused {
		return nil
	}
	return err
}

// refusal carries an error of any kind with which a caller's function
// refused a change: write returns it as it is.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }

var errClosed = errors.New("store: closed")

// group commits r together with the writes queued beside it, in one
// transaction, and returns when it is on disk.
func (db *DB) group(r *writeReq) error {
	db.closeMu.RLock()
	if db.closed {
		db.closeMu.RUnlock()
		return errClosed
	}
	db.queue <- r
	db.closeMu.RUnlock()
	return <-r.done
}

// committer is group commit without a timer: it commits every write
// queued during the previous commit in one transaction, and a lone write at
// once (bbolt's own Batch waits for a timer; docs/design.md says why not).
func (db *DB) committer() {
	defer close(db.committed)
	// A page of the mapped file that is gone (the file was cut while open)
	// is a SIGBUS; on this goroutine it becomes a panic that update recovers.
	debug.SetPanicOnFault(true)
	group := make([]*writeReq, 0, maxGroup)
	pending := make([]*writeReq, 0, maxGroup)
	for first := range db.queue {
		group = append(group[:0], first)
		// Writers the commit just released may not have had a CPU yet:
		// yielding once lets those about to write join this group instead
		// of waiting a whole commit. Alone, it returns at once.
		runtime.Gosched()
	fill:
		for len(group) < maxGroup {
			select {
			case r, ok := <-db.queue:
				if !ok {
					break fill
				}
				group = append(group, r)
			default:
				break fill
			}
		}
		db.commitGroup(group, pending)
	}
}

// commitGroup commits the writes of group that do not refuse in one
// transaction and answers each; pending is room for a copy of group. A
// write that refuses aborts the transaction (run): the group runs again
// without it.
func (db *DB) commitGroup(group, pending []*writeReq) {
	pending = append(pending[:0], group...)
	var err error
	for len(pending) > 0 {
		refused := -1
		err = db.update(func(tx *bolt.Tx) error {
			for i, r := range pending {
				if err := r.run(tx); err != nil {
					if err == errRefused {
						refused = i
					}
					return err
				}
			}
			return nil
		})
		db.pets.committed()
		if refused < 0 {
			break
		}
		pending = append(pending[:refused], pending[refused+1:]...)
		err = nil // what was refused is answered below, after the others
	}
	db.commits.Add(1)
	db.grouped.Add(int64(len(group)))
	if err == nil {
		for _, r := range group {
			r.done <- nil
		}
		return
	}
	// One write's storage failure must not fail the others: each runs
	// again alone (write's functions may run more than once), the refused
	// ones too, since what they saw was never committed.
	for _, r := range group {
		err := db.update(r.run)
		db.pets.committed()
		r.done <- outcome(err)
	}
}

// write runs fn in a grouped, fsynced write transaction, shared with other
// writers; fn may run more than once. An application failure (an *Error,
// or a refusal) is the caller's answer, and what fn wrote is not
// committed. Any other error is a storage failure.
func (db *DB) write(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := reqPool.Get().(*writeReq)
	r.fn = fn
	err := db.commit(r)
	appErr := r.appErr
	r.fn, r.appErr = nil, nil
	reqPool.Put(r)
	if diskFull(err) {
		return store.ErrorWithCause(err, store.EINSUFFICIENTSTORAGE, "the server's disk is full: nothing was written; retry after the seconds in Retry-After")
	}
	return cmp.Or(err, appErr)
}
