package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/postgres"
)

// runMigrateBack is "petstore migrate --to-data": it copies --database's
// PostgreSQL database into a new bbolt file, leaving the database as it
// was. The file is written beside its name and renamed once whole and on
// disk, so that a failed move leaves no file a service could start on; a
// file holding anything is never replaced. The database is opened with an
// instance's restore marks, as that instance would start on it: a dump
// restored since they were saved is found and undoes nothing acknowledged
// (store/postgres/restore.go). runMigrate names its errors.
func runMigrateBack(ctx context.Context, database, marks, file string, stdout io.Writer) (err error) {
	if !isPostgresURL(database) {
		return errors.New("--database (or PETSTORE_DATABASE) must be the postgres:// URL of the database to copy into the file")
	}
	if err := refuseExisting(file); err != nil {
		return err
	}
	desc := config{database: database}.dataDescription()
	if _, statErr := os.Stat(marks); marks == "" || errors.Is(statErr, os.ErrNotExist) {
		where := "nowhere (no --restore-marks, no $STATE_DIRECTORY)"
		if marks != "" {
			where = marks + " (no such file)"
		}
		// None is made: it would be of this database wherever an instance starts.
		fmt.Fprintf(stdout, "no restore marks were read, from %s: were a dump restored since the instances stopped, the file would give out again the ids acknowledged since and bring back the keys revoked since; give --restore-marks an instance's marks file (copied from its host)\n", where)
		marks = ""
	}
	from, err := postgres.Connect(ctx, database, store.Options{}, postgres.Config{RestoreMarks: marks, Logger: slog.New(slog.NewTextHandler(stdout, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return fmt.Errorf("opening the database %s: %w", desc, err)
	}
	defer from.Close()
	if err := refuseServed(ctx, from, desc); err != nil {
		return err
	}

	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".migrating-*")
	if err != nil {
		return fmt.Errorf("a file beside %s to write into: %w", file, err)
	}
	name := tmp.Name()
	// A new bbolt file starts from nothing: an empty one is refused.
	if err := errors.Join(tmp.Close(), os.Remove(name)); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(name)
			_ = os.Remove(boltstore.MarksPath(name))
		}
	}()
	to, err := boltstore.Open(name, store.Options{})
	if err != nil {
		return err
	}
	stream := &moveStream{from: from, what: "the database", out: stdout}
	fmt.Fprintf(stdout, "copying %s into %s (written as %s, renamed when complete)...\n", desc, file, name)
	if err := to.Import(ctx, stream); err != nil {
		to.Close()
		return fmt.Errorf("%w; %s was not written", moveError(err), file)
	}
	if err := to.Close(); err != nil {
		return err
	}
	if err := syncPath(name); err != nil {
		return err
	}
	// Again: a file may have come in the meantime.
	if err := refuseExisting(file); err != nil {
		return err
	}
	if err := os.Rename(name, file); err != nil {
		return err
	}
	if err := os.Rename(boltstore.MarksPath(name), boltstore.MarksPath(file)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := syncPath(filepath.Dir(file)); err != nil {
		return err
	}
	stream.copied(desc, file)
	if stream.renumbered > 0 {
		fmt.Fprintf(stdout, "; %d events that PostgreSQL numbered were numbered again after the file's own (the clients' cursors of them resume where they would have)", stream.renumbered)
	}
	fmt.Fprintf(stdout, "; start the service with --data %s (PETSTORE_DATA) and without --database\n", file)
	return nil
}

// refuseServed refuses a database that a petstore service still uses: the
// file would miss what it writes during and after the copy. The sessions
// of a service just stopped are given a few seconds to end.
func refuseServed(ctx context.Context, db *postgres.DB, desc string) error {
	for tries := 1; ; tries++ {
		pids, err := db.ServiceSessions(ctx)
		if err != nil {
			return fmt.Errorf("looking for services still using %s: %w", desc, err)
		}
		if len(pids) == 0 {
			return nil
		}
		if tries == 50 {
			return fmt.Errorf("%s is in use by a running petstore service (%d connections named petstore in pg_stat_activity, backend pids %v): stop every instance first, or the file would miss what they write during and after the copy", desc, len(pids), pids)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// refuseExisting refuses a target holding anything: it may be a service's
// data.
func refuseExisting(file string) error {
	fi, err := os.Stat(file)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory: --to-data names the new data file", file)
	case fi.Size() > 0:
		return fmt.Errorf("%s exists and holds %d bytes: the way back writes a new file and never replaces one; name another file, or move this one away first", file, fi.Size())
	}
	return nil
}

// syncPath flushes a file, or a directory's entries, to disk.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}
