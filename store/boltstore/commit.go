package boltstore

import (
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

// errRefused aborts the transaction in which a write's function refused
// (see run).
var errRefused = errors.New("store: a write refused; its transaction is rolled back")

// run runs r's function in tx. An application error (an *Error, or a
// refusal) is kept as r's answer and aborts tx with errRefused, so that the
// transaction is rolled back and whatever the function wrote before it
// refused is never committed: a function may refuse at any point, after
// writing or not.
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
// (UpdateProject's, for one) refused a change: write returns it as it is,
// as it does an *Error.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }

var errClosed = errors.New("store: closed")

// group commits r together with the writes queued beside it: one
// transaction, one fsync for all of them. It returns when r's group is on
// disk.
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

// committer is group commit without a timer: it takes every write queued
// while the previous commit was on its way to disk, and commits them in one
// transaction. A lone write is committed at once; under load a group grows
// to what arrived during one fsync. (bbolt's own Batch closes a group when
// a timer fires, so under load short groups queue up behind the writer
// lock and most of the fsyncs are wasted; docs/design.md has the figures.)
func (db *DB) committer() {
	defer close(db.committed)
	// A page of the mapped file that is gone (the file was cut while open)
	// is a SIGBUS; on this goroutine it becomes a panic that update recovers.
	debug.SetPanicOnFault(true)
	group := make([]*writeReq, 0, maxGroup)
	pending := make([]*writeReq, 0, maxGroup)
	for first := range db.queue {
		group = append(group[:0], first)
		// Writers the commit just released, and requests that arrived
		// during it, are runnable but may not have had a CPU yet: the
		// committer goes to the back of the run queue once, so that those
		// about to write join this group instead of waiting a whole commit
		// for the next. BenchmarkDurableWrites shows the larger groups and the
		// lower CPU per write this gives (docs/performance.md has figures).
		// With nothing else runnable it returns at once, so a lone write is
		// not delayed.
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
// transaction and answers every one of them; pending is room for a copy of
// group.
//
// A write that refuses aborts the transaction (see run): the group runs
// again without it, so that the others are committed without anything it
// wrote. It is answered with its refusal once the others are on disk.
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

// write runs fn in a grouped, fsynced write transaction.
//
// The committer runs fn in a transaction shared with other writers and may
// run it more than once. An application failure (an *Error, or a refusal)
// is the caller's answer: its run is rolled back, whatever it wrote, and the
// other writes of the group are committed without it. Any other error is a
// storage failure and aborts the group (the committer then runs each write
// of the group alone).
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
	if err != nil {
		return err
	}
	return appErr
}
