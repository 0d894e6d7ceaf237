package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/boltstore"
)

// restore writes a backup to a file of its own and opens it, as an operator
// restoring it would.
func restore(tb testing.TB, backup []byte) *boltstore.DB {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "restored.db")
	if err := os.WriteFile(path, backup, 0o600); err != nil {
		tb.Fatal(err)
	}
	db := mustOpenPath(tb, path)
	if err := db.Check(ctx); err != nil {
		tb.Fatalf("the restored backup does not check: %v", err)
	}
	return db
}

func TestBackup_RoundTrip(t *testing.T) {
	db := domaintest.OpenStore(t)
	if _, err := db.EnsureAdminToken(ctx, "admin-secret"); err != nil {
		t.Fatal(err)
	}
	_, keySecret, err := db.CreateAPIKey(ctx, "shop", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mustCategory(t, db, "dogs")
	var pets []store.Pet
	for _, name := range []string{"Rex", "Fido", "Laika"} {
		p := mustPet(t, db, name, c.ID, "")
		mustStock(t, db, p.ID, 10)
		pets = append(pets, p)
	}
	o := mustOrder(t, db, store.Order{PetID: pets[1].ID, Quantity: 4})
	if err := db.Check(ctx); err != nil {
		t.Fatalf("Check of the live file: %v", err)
	}
	size, err := db.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	n, err := db.Backup(ctx, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) || n != size {
		t.Fatalf("Backup wrote %d bytes, returned %d, Size said %d", buf.Len(), n, size)
	}

	r := restore(t, buf.Bytes())
	for _, p := range pets {
		if got, err := r.Pet(ctx, p.ID); err != nil || got.Name != p.Name {
			t.Errorf("pet %d in the backup: %+v, %v; want %q", p.ID, got, err, p.Name)
		}
	}
	if inv, err := r.InventoryItem(ctx, pets[1].ID); err != nil || inv.Quantity != 6 {
		t.Errorf("stock of pet %d in the backup: %+v, %v; want 6", pets[1].ID, inv, err)
	}
	if got, err := r.Order(ctx, o.ID); err != nil || got.PetID != o.PetID || got.Quantity != 4 {
		t.Errorf("order in the backup: %+v, %v", got, err)
	}
	if _, ok := r.AuthenticateAPIKey(keySecret); !ok {
		t.Error("the API key does not authenticate against the backup")
	}
	if !r.CheckAdminToken("admin-secret") {
		t.Error("the admin token does not authenticate against the backup")
	}
	// The restored file takes writes.
	mustPet(t, r, "After", c.ID, "")
}

// TestBackup_IsASnapshot commits a write while the backup's read transaction
// is open: the backup holds the file as it was when the transaction began,
// and the write lands in the live file.
func TestBackup_IsASnapshot(t *testing.T) {
	db := domaintest.OpenStore(t)
	c := mustCategory(t, db, "dogs")
	before := mustPet(t, db, "Before", c.ID, "")

	var announced int64
	during := make(chan error, 1)
	var late store.Pet
	var buf bytes.Buffer
	n, err := db.BackupSized(ctx, func(size int64) (io.Writer, error) {
		announced = size
		// Not waited for here: a write that must grow the file's memory map
		// waits for this read transaction to end (see Backup).
		go func() {
			late = store.Pet{Name: "Late", CategoryID: c.ID}
			during <- db.CreatePet(ctx, &late, nil)
		}()
		return &buf, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-during; err != nil {
		t.Fatal(err)
	}
	if n != announced || n != int64(buf.Len()) {
		t.Fatalf("announced %d bytes, wrote %d, returned %d", announced, buf.Len(), n)
	}
	r := restore(t, buf.Bytes())
	if _, err := r.Pet(ctx, before.ID); err != nil {
		t.Errorf("a pet committed before the backup is missing: %v", err)
	}
	if got, err := r.Pet(ctx, late.ID); store.ErrorCode(err) != store.ENOTFOUND {
		t.Errorf("a pet committed after the backup began is in it: %+v, %v", got, err)
	}
	if _, err := db.Pet(ctx, late.ID); err != nil {
		t.Errorf("the live file lost the write made during the backup: %v", err)
	}
}

type failingWriter struct {
	after int // bytes accepted before failing
	n     int
}

var errDiskFull = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.after {
		k := w.after - w.n
		w.n = w.after
		return k, errDiskFull
	}
	w.n += len(p)
	return len(p), nil
}

func TestBackup_Failures(t *testing.T) {
	db := domaintest.OpenStore(t)
	mustCategory(t, db, "dogs")

	t.Run("open fails", func(t *testing.T) {
		refused := errors.New("refused")
		n, err := db.BackupSized(ctx, func(int64) (io.Writer, error) { return nil, refused })
		if n != 0 || !errors.Is(err, refused) {
			t.Fatalf("got %d, %v; want 0, %v", n, err, refused)
		}
	})
	t.Run("writer fails", func(t *testing.T) {
		w := &failingWriter{after: 10000}
		n, err := db.Backup(ctx, w)
		if !errors.Is(err, errDiskFull) || n != 10000 {
			t.Fatalf("got %d, %v; want 10000, %v", n, err, errDiskFull)
		}
	})
	t.Run("cancelled before", func(t *testing.T) {
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		var buf bytes.Buffer
		if _, err := db.Backup(cancelled, &buf); !errors.Is(err, context.Canceled) || buf.Len() != 0 {
			t.Fatalf("got %v with %d bytes written", err, buf.Len())
		}
	})
	t.Run("cancelled during", func(t *testing.T) {
		cancelled, cancel := context.WithCancel(ctx)
		defer cancel()
		w := writerFunc(func(p []byte) (int, error) {
			cancel() // the client went away after the first page
			return len(p), nil
		})
		n, err := db.Backup(cancelled, w)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
		if size, _ := db.Size(ctx); n >= size {
			t.Fatalf("the cancelled backup wrote %d of %d bytes", n, size)
		}
	})
	// None of that left a read transaction open: a write that grows the
	// file (and so remaps it) still commits.
	c := mustCategory(t, db, "cats")
	for range 200 {
		mustPet(t, db, "grow", c.ID, "")
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestBackup_WritersGoOnDuringASlowBackup holds a backup's read transaction
// open (a slow download) while writes that grow the file, and reads, go on.
//
// bbolt remaps the file when a write grows it past its memory map, and the
// remap waits for every open read transaction; while it waits, new read
// transactions wait behind it. So unless the map is large enough from the
// start (bolt.Options.InitialMmapSize), a slow backup download stalls every
// request that touches the store until it ends.
func TestBackup_WritersGoOnDuringASlowBackup(t *testing.T) {
	db := domaintest.OpenStore(t)
	c := mustCategory(t, db, "dogs")
	before := mustPet(t, db, "Before", c.ID, "")

	paused, resume := make(chan struct{}), make(chan struct{})
	backupDone := make(chan error, 1)
	var buf bytes.Buffer
	go func() {
		first := true
		_, err := db.Backup(ctx, writerFunc(func(p []byte) (int, error) {
			if first {
				first = false
				close(paused)
				<-resume // the download stalls after its first page
			}
			return buf.Write(p)
		}))
		backupDone <- err
	}()
	<-paused

	const writes = 300 // about 1 MB of pages: the file grows several times
	progress := make(chan error, 1)
	var created []int64
	go func() {
		for range writes {
			p := store.Pet{Name: "during", CategoryID: c.ID}
			if err := db.CreatePet(ctx, &p, nil); err != nil {
				progress <- err
				return
			}
			created = append(created, p.ID)
			if _, err := db.Pet(ctx, before.ID); err != nil {
				progress <- err
				return
			}
		}
		progress <- nil
	}()
	// A write stalled behind the backup waits until the backup ends, which
	// is never while it is paused: the bound only catches that hang, and is
	// generous because a loaded machine runs the writes slowly.
	select {
	case err := <-progress:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		close(resume)
		<-progress
		t.Fatalf("writes and reads stalled behind a paused backup")
	}
	close(resume)
	if err := <-backupDone; err != nil {
		t.Fatal(err)
	}
	r := restore(t, buf.Bytes())
	if _, err := r.Pet(ctx, before.ID); err != nil {
		t.Errorf("the backup lacks a pet created before it: %v", err)
	}
	if _, err := r.Pet(ctx, created[0]); store.ErrorCode(err) != store.ENOTFOUND {
		t.Errorf("the backup has a pet created while it ran: %v", err)
	}
}
