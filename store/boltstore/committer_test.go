package boltstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// A storage failure in a group fails that write alone: the others run again
// each in its own transaction and get their own outcome, application errors
// included, through the pooled requests.
func TestGroupStorageFailureRetriesEachWriteAlone(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	gate, first := holdCommitter(db)

	broken := errors.New("disk on fire")
	appErr := store.Errorf(store.ECONFLICT, "no")
	writes := []struct {
		fn   func(*bolt.Tx) error
		want error
	}{
		{putMeta("test-b"), nil},
		{func(*bolt.Tx) error { return broken }, broken},
		{func(*bolt.Tx) error { return appErr }, appErr},
		{putMeta("test-e"), nil},
	}
	results := make([]chan error, len(writes))
	for i, w := range writes {
		results[i] = make(chan error, 1)
		go func() { results[i] <- db.write(ctx, w.fn) }()
		waitQueued(db, i+1) // queued in this order
	}
	commits0, grouped0 := db.commits.Load(), db.grouped.Load()
	close(gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for i, w := range writes {
		if err := <-results[i]; err != w.want {
			t.Errorf("write %d: %v, want %v", i, err, w.want)
		}
	}
	// The held write's commit, then one for the rest.
	if c, g := db.commits.Load()-commits0, db.grouped.Load()-grouped0; c != 2 || g != 1+int64(len(writes)) {
		t.Errorf("%d group commits of %d writes; want 2 of 1+%d", c, g, len(writes))
	}
	db.bolt.View(func(tx *bolt.Tx) error {
		for _, k := range []string{"test-first", "test-b", "test-e"} {
			if tx.Bucket(bktMeta).Get([]byte(k)) == nil {
				t.Errorf("%s not written", k)
			}
		}
		return nil
	})
}

// A panic inside a write, the committer's goroutine, fails that write with an
// error instead of ending the process; the writes grouped with it commit,
// the store is degraded until a write commits again.
func TestGroupPanicFailsThatWriteAlone(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	// The panicking write and a good one are committed as one group.
	gate, first := holdCommitter(db)
	panicked, good := make(chan error, 1), make(chan error, 1)
	go func() {
		panicked <- db.write(ctx, func(*bolt.Tx) error { panic("a bug in a write") })
	}()
	waitQueued(db, 1) // queued first, behind the held commit
	go func() {
		good <- db.write(ctx, putMeta("test-good"))
	}()
	waitQueued(db, 2)
	close(gate)

	if err := <-first; err != nil {
		t.Fatalf("the write before the group: %v", err)
	}
	err := <-panicked
	if err == nil || !strings.Contains(err.Error(), "a bug in a write") || store.ErrorCode(err) != store.EINTERNAL {
		t.Fatalf("the panicking write: %v, want an internal error that names the panic", err)
	}
	if err := <-good; err != nil {
		t.Fatalf("the write grouped with the panicking one: %v", err)
	}
	if err := db.Degraded(); err != nil {
		t.Fatalf("the store is degraded after a good write: %v", err)
	}
	if err := db.write(ctx, putMeta("test-after")); err != nil {
		t.Fatalf("a write after the panic: %v", err)
	}
}

// A write that refuses after it wrote commits nothing of what it wrote,
// while the writes grouped with it commit; the refusal is its answer and
// does not degrade the store.
func TestRefusalAfterWritingCommitsNothingOfIt(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	gate, first := holdCommitter(db)
	appErr := store.Errorf(store.ECONFLICT, "no")
	writes := []struct {
		fn   func(*bolt.Tx) error
		want error
	}{
		{putMeta("test-b"), nil},
		{func(tx *bolt.Tx) error {
			if err := putMeta("test-refused")(tx); err != nil {
				return err
			}
			return appErr
		}, appErr},
		{putMeta("test-e"), nil},
		{func(tx *bolt.Tx) error {
			if err := putMeta("test-refused-too")(tx); err != nil {
				return err
			}
			return refusal{errors.New("also no")}
		}, nil},
	}
	results := make([]chan error, len(writes))
	for i, w := range writes {
		results[i] = make(chan error, 1)
		go func() { results[i] <- db.write(ctx, w.fn) }()
		waitQueued(db, i+1)
	}
	commits0 := db.commits.Load()
	close(gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for i, w := range writes {
		err := <-results[i]
		if i == 3 {
			if err == nil || err.Error() != "also no" {
				t.Errorf("write %d: %v, want the refusal", i, err)
			}
		} else if err != w.want {
			t.Errorf("write %d: %v, want %v", i, err, w.want)
		}
	}
	if c := db.commits.Load() - commits0; c != 2 {
		t.Errorf("%d group commits; want 2 (the held write, then the rest)", c)
	}
	if err := db.Degraded(); err != nil {
		t.Errorf("degraded after refusals: %v", err)
	}
	db.bolt.View(func(tx *bolt.Tx) error {
		for _, k := range []string{"test-first", "test-b", "test-e"} {
			if tx.Bucket(bktMeta).Get([]byte(k)) == nil {
				t.Errorf("%s not written", k)
			}
		}
		for _, k := range []string{"test-refused", "test-refused-too"} {
			if tx.Bucket(bktMeta).Get([]byte(k)) != nil {
				t.Errorf("%s written by a write that refused", k)
			}
		}
		return nil
	})
}

// putMeta is a write that stores key in the meta bucket.
func putMeta(key string) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error { return tx.Bucket(bktMeta).Put([]byte(key), []byte("v")) }
}

// holdCommitter holds the committer in a first write, which stores
// "test-first", until gate is closed, so that the writes queued meanwhile
// are committed as one group; first gets that write's outcome.
func holdCommitter(db *DB) (gate chan struct{}, first chan error) {
	gate, held := make(chan struct{}), make(chan struct{})
	first = make(chan error, 1)
	go func() {
		first <- db.write(context.Background(), func(tx *bolt.Tx) error {
			select {
			case <-gate:
			default:
				close(held)
				<-gate
			}
			return putMeta("test-first")(tx)
		})
	}()
	<-held
	return gate, first
}

// waitQueued waits until n writes wait in the committer's queue.
func waitQueued(db *DB, n int) {
	for len(db.queue) < n {
		time.Sleep(time.Millisecond)
	}
}
