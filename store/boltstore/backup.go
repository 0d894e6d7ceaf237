package boltstore

import (
	"context"
	"errors"
	"fmt"
	"io"

	bolt "go.etcd.io/bbolt"
)

// Backup writes a consistent copy of the whole file to w, as it stands in one
// read transaction, and returns the number of bytes written. Writes go on
// while it runs, but for one that needs the file to grow past what bbolt
// has mapped: the remap waits for every read transaction, this one too.
func (db *DB) Backup(ctx context.Context, w io.Writer) (int64, error) {
	return db.BackupSized(ctx, func(int64) (io.Writer, error) { return w, nil })
}

// BackupSized is Backup for a destination that must know the size before
// the first byte (a Content-Length): open is called with it, inside the
// read transaction, and returns the writer to copy to.
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
				// the original for errors.Is.
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

// Size is the number of bytes a backup started now would write: the
// high-water mark of the pages in use, which deletes do not shrink.
func (db *DB) Size(ctx context.Context) (int64, error) {
	return readValue(ctx, db, func(tx *bolt.Tx) (int64, error) { return tx.Size(), nil })
}

// Check verifies the structure of the whole file and returns every problem
// found, joined: it is not for request paths.
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
