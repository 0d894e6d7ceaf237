package boltstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/boltstore"
)

// A data file put back from a backup taken before some writes: the open
// finds it, a key revoked after the backup is refused, no pet id
// acknowledged after the backup is given out again, event ids go on after
// those consumers saw, and one store.restored says what was rolled back.
// An operator who put the backup back on purpose to bring the key back
// forgets its revocation first (boltstore.Unrevoke), and it works.
func TestFilePutBackFromABackup(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "petstore.db")
	db, err := boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat := store.Category{Name: "dogs"}
	if err := db.CreateCategory(ctx, &cat, nil); err != nil {
		t.Fatal(err)
	}
	revoked, revokedSecret, err := db.CreateAPIKey(ctx, "revoked after the backup", nil)
	if err != nil {
		t.Fatal(err)
	}
	pet := func(db *boltstore.DB) int64 {
		t.Helper()
		p := store.Pet{Name: "Rex", CategoryID: cat.ID, Status: "available"}
		if err := db.CreatePet(ctx, &p, nil); err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	pet(db)
	backup := backupTo(t, db, filepath.Join(dir, "backup.db"))
	var highest int64
	for range 20 {
		highest = pet(db)
	}
	if err := db.RevokeAPIKey(ctx, revoked.ID); err != nil {
		t.Fatal(err)
	}
	seen, err := db.Events(ctx, store.EventFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	lastSeen := seen[len(seen)-1].ID
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = putBack(t, backup, path)
	if _, ok := db.AuthenticateAPIKey(revokedSecret); ok {
		t.Error("a key revoked after the backup works once the backup is put back")
	}
	if id := pet(db); id <= highest {
		t.Errorf("a new pet got id %d; %d was acknowledged before the backup was put back", id, highest)
	}
	after, err := db.Events(ctx, store.EventFilter{After: lastSeen, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) < 2 || after[0].Type != store.EventStoreRestored {
		t.Fatalf("the events after the last one seen before: %v, want store.restored and pet.created", after)
	}
	var r store.Restored
	if err := json.Unmarshal(after[0].Data, &r); err != nil {
		t.Fatal(err)
	}
	pets := r.IDs[store.ResPets]
	if r.Store != "bbolt" || pets.Restored != 1 || pets.Acknowledged != highest || pets.ResumesAfter <= highest || r.RevokedAgain != 1 || r.RestoredTo == "" || db.Restored() == nil {
		t.Errorf("store.restored: %s", after[0].Data)
	}
	// A second open of the same file finds nothing more.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if db.Restored() != nil {
		t.Errorf("a second open found a restore again: %+v", db.Restored())
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// On purpose, to bring the key back: forget its revocation first.
	if n, err := boltstore.Unrevoke(path, []int64{revoked.ID}); n != 1 || err != nil {
		t.Fatalf("Unrevoke: %d %v", n, err)
	}
	db = putBack(t, backup, path)
	defer db.Close()
	if _, ok := db.AuthenticateAPIKey(revokedSecret); !ok {
		t.Error("a key whose revocation was forgotten does not work once the backup is put back")
	}
	if id := pet(db); id <= highest {
		t.Errorf("a new pet got id %d; %d was acknowledged before", id, highest)
	}
}

// A save of the restore marks that fails (here their path is taken by a
// folder) is logged, since no caller sees it, and once the path is free
// again the marks catch up with what the file acknowledged meanwhile.
func TestFailedMarksSaveIsLogged(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "petstore.db")
	logs := &domaintest.SyncBuffer{}
	db, err := boltstore.Open(path, store.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	marks := boltstore.MarksPath(path)
	if err := os.Remove(marks); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(marks, "taken"), 0o700); err != nil {
		t.Fatal(err)
	}
	cat := store.Category{Name: "dogs"}
	if err := db.CreateCategory(ctx, &cat, nil); err != nil {
		t.Fatal(err)
	}
	domaintest.WaitFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		if out := logs.String(); !strings.Contains(out, "saving the restore marks beside the data file failed") || !strings.Contains(out, marks) {
			return fmt.Errorf("no log line of the failed save naming %s:\n%s", marks, out)
		}
		return nil
	})
	if err := os.RemoveAll(marks); err != nil {
		t.Fatal(err)
	}
	domaintest.WaitFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		data, err := os.ReadFile(marks)
		if err != nil {
			return err
		}
		var f struct {
			LastIDs map[string]int64 `json:"lastIds"`
		}
		if err := json.Unmarshal(data, &f); err != nil || f.LastIDs[store.ResCategories] < cat.ID {
			return fmt.Errorf("the marks do not hold category %d, acknowledged while they could not be saved (%v): %s", cat.ID, err, data)
		}
		return nil
	})
}

// Unrevoke on the file of a running service would be undone without a
// word: the service writes its own marks back at its next id or at stop.
// It is refused while a process has the file open, and works once it is
// stopped.
func TestUnrevokeRefusesAFileInUse(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "petstore.db")
	db, err := boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := db.CreateAPIKey(ctx, "revoked", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.RevokeAPIKey(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	n, err := boltstore.Unrevoke(path, []int64{key.ID})
	if err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), path) {
		t.Errorf("Unrevoke while the file is in use: %d, %v; want a refusal naming the file in use", n, err)
	}
	if err := db.CreateCategory(ctx, &store.Category{Name: "after"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := boltstore.Unrevoke(path, []int64{key.ID}); n != 1 || err != nil {
		t.Errorf("Unrevoke once the service stopped: %d, %v; want the revocation forgotten", n, err)
	}
}

// A backup put back while the store runs, against the documented steps
// (stop, replace, start): copied over the file (cp writes in place) or
// moved over it (mv). Without a word, the store went on acknowledging
// writes: over a copy it gave out again pet ids acknowledged before and
// wrote with its own idea of the file's free pages, over a move it wrote
// into the file that was replaced, lost at the next start. From the
// first write after the put-back every write is refused, saying why,
// and /readyz with it; a restart opens the file put back and finds the
// restore as after the documented steps.
func TestBackupPutBackUnderTheRunningStore(t *testing.T) {
	for _, way := range []string{"copied", "moved"} {
		t.Run(way, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "petstore.db")
			logs := &domaintest.SyncBuffer{}
			db, err := boltstore.Open(path, store.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			cat := store.Category{Name: "dogs"}
			if err := db.CreateCategory(ctx, &cat, nil); err != nil {
				t.Fatal(err)
			}
			var backup bytes.Buffer
			if _, err := db.Backup(ctx, &backup); err != nil {
				t.Fatal(err)
			}
			var highest int64
			for range 20 {
				p := store.Pet{Name: "Rex", CategoryID: cat.ID, Status: "available"}
				if err := db.CreatePet(ctx, &p, nil); err != nil {
					t.Fatal(err)
				}
				highest = p.ID
			}
			// As when the backup is older than a second: the marks beside
			// the file hold the pets given out since.
			domaintest.WaitFor(t, 30*time.Second, 20*time.Millisecond, func() error {
				m, err := store.LoadMarks(boltstore.MarksPath(path), "bbolt")
				if err == nil && m.Mark(store.ResPets) < highest {
					err = fmt.Errorf("the marks hold pet %d, not yet %d", m.Mark(store.ResPets), highest)
				}
				return err
			})
			if way == "copied" {
				err = os.WriteFile(path, backup.Bytes(), 0o600)
			} else if err = os.WriteFile(path+".new", backup.Bytes(), 0o600); err == nil {
				err = os.Rename(path+".new", path)
			}
			if err != nil {
				t.Fatal(err)
			}
			p := store.Pet{Name: "after the put-back", CategoryID: cat.ID, Status: "available"}
			err = db.CreatePet(ctx, &p, nil)
			if want := "changed under the running service"; err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("a write after the put-back: id %d (%d acknowledged before), %v; want a refusal saying %q", p.ID, highest, err, want)
			}
			if err := db.Ping(ctx); err == nil {
				t.Error("the store is ready after the put-back")
			}
			if !strings.Contains(logs.String(), "changed under the running service") {
				t.Errorf("the log does not say so:\n%s", logs)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db, err = boltstore.Open(path, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if db.Restored() == nil {
				t.Error("the restart did not find the restore")
			}
			p = store.Pet{Name: "after the restart", CategoryID: cat.ID, Status: "available"}
			if err := db.CreatePet(ctx, &p, nil); err != nil || p.ID <= highest {
				t.Errorf("a pet after the restart: id %d, %v; %d was acknowledged before", p.ID, err, highest)
			}
		})
	}
}

// The marks file removed while the store runs (by hand, or a cleaner of
// old files) is written again: it was only written when the marks
// changed, so a store that gave out nothing more stopped without it, and
// a backup put back then gave out again the ids acknowledged before.
func TestMarksRemovedWhileRunningAreWrittenAgain(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "petstore.db")
	db, err := boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var backup bytes.Buffer
	if _, err := db.Backup(ctx, &backup); err != nil {
		t.Fatal(err)
	}
	cat := store.Category{Name: "dogs"}
	if err := db.CreateCategory(ctx, &cat, nil); err != nil {
		t.Fatal(err)
	}
	domaintest.WaitFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		m, err := store.LoadMarks(boltstore.MarksPath(path), "bbolt")
		if err == nil && m.Mark(store.ResCategories) < cat.ID {
			err = fmt.Errorf("the marks do not hold category %d yet", cat.ID)
		}
		return err
	})
	if err := os.Remove(boltstore.MarksPath(path)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, backup.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	db, err = boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	again := store.Category{Name: "cats"}
	if err := db.CreateCategory(ctx, &again, nil); err != nil || again.ID <= cat.ID || db.Restored() == nil {
		t.Errorf("after the backup was put back: category %d (%v), restore found: %v; category %d was acknowledged before", again.ID, err, db.Restored() != nil, cat.ID)
	}
}

// A version (an ETag) acknowledged after the backup is never given again
// once the backup is put back: a client that read the pet at it, with
// what it then held, must not pass If-Match with it (or get 304 for it)
// once the pet holds something else at the same number.
func TestFilePutBackNeverGivesAVersionAgain(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "petstore.db")
	db, err := boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat := store.Category{Name: "dogs"}
	if err := db.CreateCategory(ctx, &cat, nil); err != nil {
		t.Fatal(err)
	}
	p := store.Pet{Name: "Rex", CategoryID: cat.ID, Status: "available"}
	if err := db.CreatePet(ctx, &p, nil); err != nil {
		t.Fatal(err)
	}
	backup := backupTo(t, db, filepath.Join(dir, "backup.db"))
	acked := map[int64]string{}
	for _, name := range []string{"Rex B", "Rex C"} {
		q := store.Pet{ID: p.ID, Name: name, CategoryID: cat.ID, Status: "available"}
		if err := db.ReplacePet(ctx, &q, store.Condition{}); err != nil {
			t.Fatal(err)
		}
		acked[q.Version] = name
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = putBack(t, backup, path)
	defer db.Close()
	for _, name := range []string{"Rex D", "Rex E"} {
		q := store.Pet{ID: p.ID, Name: name, CategoryID: cat.ID, Status: "available"}
		if err := db.ReplacePet(ctx, &q, store.Condition{}); err != nil {
			t.Fatal(err)
		}
		if was, ok := acked[q.Version]; ok {
			t.Errorf("after the backup was put back, the pet named %q got version %d, which was acknowledged before for %q", name, q.Version, was)
		}
	}
	for v, name := range acked {
		q := store.Pet{ID: p.ID, Name: "Rex F", CategoryID: cat.ID, Status: "available"}
		if err := db.ReplacePet(ctx, &q, store.Condition{IfMatch: []int64{v}}); store.ErrorCode(err) != store.EPRECONDITION {
			t.Errorf("If-Match %d (the pet named %q, rolled back) after the backup was put back: %v, want %s", v, name, err, store.EPRECONDITION)
		}
	}
}

// The marks follow the file's counters once a second, so a crash (kill -9,
// a power cut) leaves them behind by what the last second gave out, which
// at full load is thousands of ids. A backup put back after such a crash
// must still give none of them again: the margin past the marks follows
// the largest rise seen between two of their updates.
func TestFilePutBackAfterACrashUnderLoad(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "petstore.db")
	db, err := boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat := store.Category{Name: "dogs"}
	if err := db.CreateCategory(ctx, &cat, nil); err != nil {
		t.Fatal(err)
	}
	backup := backupTo(t, db, filepath.Join(dir, "backup.db"))
	const burst = 1500 // a second's creates at a load the service takes
	db.ObserveMarks()
	if err := db.BulkCreatePets(ctx, burst, cat.ID); err != nil {
		t.Fatal(err)
	}
	db.ObserveMarks()
	// The marks as a crash would leave them: a second's burst after this.
	stale, err := os.ReadFile(boltstore.MarksPath(path))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.BulkCreatePets(ctx, burst, cat.ID); err != nil {
		t.Fatal(err)
	}
	p := store.Pet{Name: "the last one acknowledged", CategoryID: cat.ID, Status: "available"}
	if err := db.CreatePet(ctx, &p, nil); err != nil {
		t.Fatal(err)
	}
	highest := p.ID
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(boltstore.MarksPath(path), stale, 0o600); err != nil {
		t.Fatal(err)
	}
	db = putBack(t, backup, path)
	defer db.Close()
	p = store.Pet{Name: "after the backup was put back", CategoryID: cat.ID, Status: "available"}
	if err := db.CreatePet(ctx, &p, nil); err != nil {
		t.Fatal(err)
	}
	if p.ID <= highest {
		t.Errorf("a pet created after the backup was put back got id %d; %d was acknowledged before the crash", p.ID, highest)
	}
}

// backupTo writes db's backup (GET /admin/backup's) to path.
func backupTo(t *testing.T, db *boltstore.DB, path string) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := db.Backup(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	return path
}

// putBack puts backup back as docs/operations.md says: the service
// stopped, the file replaced, the service started.
func putBack(t *testing.T, backup, path string) *boltstore.DB {
	t.Helper()
	data, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return db
}
