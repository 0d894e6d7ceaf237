package boltstore

import (
	"context"
	"errors"
	"fmt"
	"io"

	bolt "go.etcd.io/bbolt"
)

// Backup writes a consistent copy of the whole file to w, as it stands in one
// read transaction, and returns the number of bytes written. The copy is a
// complete bbolt file: Open opens it, and a server started on it serves
// everything that was committed before the backup began (entities, settings,
// domains, API keys, the admin token's hash, certificates), and nothing
// committed after.
//
// Reads and writes go on while it runs: bbolt's writers never wait for
// readers, with one exception. When a write needs the file to grow past what
// bbolt has memory-mapped, the remap waits for every open read transaction,
// this one included, so a slow reader of a backup can hold writers up for as
// long as the copy takes.
func (db *DB) Backup(ctx context.Context, w io.Writer) (int64, error) {
	return db.BackupSized(ctx, func(int64) (io.Writer, error) { return w, nil })
}

// BackupSized is Backup for a destination that must know the size before the
// first byte, such as an HTTP response with a Content-Length: open is called
// inside the read transaction with the exact number of bytes that will
// follow, and returns the writer to copy them to. An error from open is
// returned as it is, before anything is written.
func (db *DB) BackupSized(ctx context.Context, open func(size int64) (io.Writer, error)) (int64, error) {
	var n int64
	err := db.read(ctx, func(tx *bolt.Tx) error {
		w, err := open(tx.Size())
		if err != nil {
			return err
		}
		cw := &ctxWriter{ctx: ctx, w: w}
		if n, err = tx.WriteTo(cw); err != nil {
			if cw.err != nil {
				// bbolt formats some of its writer's errors with %s: keep
				// the original for errors.Is (context.Canceled, a closed
				// connection).
				err = cw.err
			}
			return fmt.Errorf("backup: %w", err)
		}
		return nil
	})
	return n, err
}

// ctxWriter stops a copy once its context is done, so that an abandoned
// backup does not keep its read transaction open until the copy ends.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
	err error // the first error of the destination or the context
}

func (c *ctxWriter) Write(p []byte) (int, error) {
	if c.err == nil {
		c.err = c.ctx.Err()
	}
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.err = err
	return n, err
}

// Size is the size of the file in bytes as of a read transaction: the number
// of bytes a backup started now would write. It is the high-water mark of
// the pages in use, so it does not shrink when data is deleted (freed pages
// are reused instead).
func (db *DB) Size(ctx context.Context) (int64, error) {
	var n int64
	err := db.read(ctx, func(tx *bolt.Tx) error {
		n = tx.Size()
		return nil
	})
	return n, err
}

// Check verifies the structure of the file in one read transaction: every
// page reachable once and only once, free pages not in use, keys in order.
// It returns every problem found, joined, or nil. It reads the whole file,
// so it is for tests and for checking a backup, not for request paths.
func (db *DB) Check(ctx context.Context) error {
	return db.read(ctx, func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			return fmt.Errorf("store: %d problems in %s: %w", len(errs), db.path, errors.Join(errs...))
		}
		return nil
	})
}
