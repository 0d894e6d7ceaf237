package boltstore_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/boltstore"
)

// compactFile writes a backup of a store with n pets to a new file and
// returns its path. A backup holds exactly the pages in use, so every cut of
// it removes pages that the file's header says are there.
func compactFile(tb testing.TB, n int) string {
	tb.Helper()
	db := domaintest.OpenStore(tb)
	c := mustCategory(tb, db, "bulk")
	if err := db.BulkCreatePets(ctx, n, c.ID); err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := db.Backup(ctx, &buf); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "restored.db")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// Any file that is not a complete bbolt file is refused with one line that
// names it and says what is wrong, before bbolt maps it: a cut file used to
// kill the process with SIGBUS at the first read of a missing page.
func TestOpen_RefusesDamagedFiles(t *testing.T) {
	whole := compactFile(t, 20000)
	data, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 2<<20 {
		t.Fatalf("the fixture is %d bytes; the cuts below need more than 2 MB", len(data))
	}
	const pageSize = 4096 // what bbolt chose on this machine; checked below
	if got := boltstore.PageSizeOf(data); got != pageSize {
		t.Skipf("bbolt chose %d-byte pages here; the damaged meta cases assume %d", got, pageSize)
	}
	flipped := func(offsets ...int) []byte {
		b := bytes.Clone(data)
		for _, off := range offsets {
			b[off] ^= 0xff
		}
		return b
	}
	// The transaction id of meta page 0 and of meta page 1: covered by
	// their checksums.
	const txid0, txid1 = 16 + 48, pageSize + 16 + 48
	// A backup damaged past its meta pages: the page id in the root
	// bucket's page header, the flags in the freelist's. bbolt panics on
	// both as it opens the file.
	root, freelist := boltstore.RootAndFreelist(data)
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", []byte{}, "is empty (0 bytes)"},
		{"text", []byte("this is not a database\n"), "is not a bbolt file"},
		{"zeros", make([]byte, 3*pageSize), "is not a bbolt file"},
		{"cut to 8 KB", data[:8<<10], "is truncated"},
		{"cut to 1 MB", data[:1<<20], "is truncated"},
		{"backup download cut halfway", data[:len(data)/2], "is truncated"},
		{"last 20 pages cut", data[:len(data)-20*pageSize], "is truncated"},
		{"cut inside the first page", data[:100], "is truncated"},
		{"both meta pages damaged", flipped(txid0, txid1), "neither meta page is valid"},
		{"root page damaged", flipped(root * pageSize), "is damaged"},
		{"freelist page damaged", flipped(freelist*pageSize + 8), "is damaged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "petstore.db")
			if err := os.WriteFile(path, tc.file, 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := boltstore.Open(path, store.Options{})
			if err == nil {
				db.Close()
				t.Fatalf("Open accepted the file")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, path) || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line naming %s and saying %q", msg, path, tc.want)
			}
			// Refused, nothing changed: the file as it was, no marks.
			if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, tc.file) {
				t.Errorf("the refused file changed (%v)", err)
			}
			if _, err := os.Stat(boltstore.MarksPath(path)); err == nil {
				t.Errorf("the refused file got marks")
			}
		})
	}
	// One damaged meta page is what bbolt's two meta pages are for: it
	// opens on the other, and so does the check.
	t.Run("one meta page damaged", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "petstore.db")
		if err := os.WriteFile(path, flipped(txid0), 0o600); err != nil {
			t.Fatal(err)
		}
		db := mustOpenPath(t, path)
		if _, _, err := db.ListPets(ctx, store.PetFilter{}); err != nil {
			t.Fatal(err)
		}
	})
	// A file that did not exist is a new store.
	t.Run("missing", func(t *testing.T) {
		mustOpenPath(t, filepath.Join(t.TempDir(), "new.db"))
	})
}

func TestOpen_FileInUseSaysSo(t *testing.T) {
	db := domaintest.OpenStore(t)
	db2, err := boltstore.Open(db.Path(), store.Options{})
	if err == nil {
		db2.Close()
		t.Fatal("a second Open of a file in use succeeded")
	}
	if want := "in use by another process"; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), db.Path()) {
		t.Fatalf("error %q: want it to name the file and say %q", err, want)
	}
}

// A file cut while the store has it open: bbolt's reads of the missing
// pages fault. Each failing write or read gets an error, the process stays
// up, and the store says it is degraded.
func TestWrite_FileCutWhileOpenFailsWritesNotTheProcess(t *testing.T) {
	path := compactFile(t, 20000)
	db := mustOpenPath(t, path)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, info.Size()-20*4096); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		p := store.Pet{Name: "after the cut", CategoryID: 1}
		err := db.CreatePet(ctx, &p, nil)
		if err == nil {
			t.Fatal("a write to the cut file succeeded")
		}
		checkFailedWrite(t, db, err, store.EINTERNAL, "on the cut file")
	}
}

// checkFailedWrite checks that a write failed with the code want, and that
// the store then says it is degraded and fails Ping; where says when.
func checkFailedWrite(t *testing.T, db *boltstore.DB, err error, want, where string) {
	t.Helper()
	if code := store.ErrorCode(err); code != want {
		t.Fatalf("write %s: %v, code %q, want %q", where, err, code, want)
	}
	if db.Degraded() == nil {
		t.Fatalf("the store is not degraded after a failed write %s", where)
	}
	if err := db.Ping(ctx); err == nil {
		t.Fatalf("Ping succeeded %s", where)
	}
}

// A damaged page (a bad sector under a leaf of the pets bucket): the write
// that meets it fails and marks the store damaged until a restart. A write
// elsewhere in the file still commits, and Ping keeps failing, naming the
// file and saying to restore a backup; the process is told once. A new
// store on the file (the restart) is ready until it meets the page again.
func TestWrite_DamagedPageKeepsTheStoreDamagedUntilRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "petstore.db")
	db, err := boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := mustCategory(t, db, "dogs")
	target := store.Pet{Name: "damaged-target", CategoryID: c.ID}
	if err := db.CreatePet(ctx, &target, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.BulkCreatePets(ctx, 500, c.ID); err != nil {
		t.Fatal(err)
	}
	// The pet's name is also in its pet.created event: drop the events, so
	// that only the pet's page is damaged and the outbox, which every write
	// reaches, is not.
	if _, err := db.PruneEvents(ctx, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	var told []error
	var toldMu sync.Mutex
	db.OnDamaged(func(err error) { toldMu.Lock(); told = append(told, err); toldMu.Unlock() })
	domaintest.DamagePages(t, path, []byte("damaged-target"))

	for range 2 {
		p := target
		p.Name = "renamed"
		err := db.ReplacePet(ctx, &p, store.Condition{})
		if err == nil {
			t.Fatal("a write to the damaged page succeeded")
		}
		checkFailedWrite(t, db, err, store.EINTERNAL, "on the damaged page")
	}
	other := store.Pet{Name: "elsewhere", CategoryID: c.ID}
	if err := db.CreatePet(ctx, &other, nil); err != nil {
		t.Fatalf("a write elsewhere in the file: %v", err)
	}
	err = db.Ping(ctx)
	if err == nil {
		t.Fatal("Ping succeeded after a write elsewhere; the damage is still there")
	}
	for _, want := range []string{path, "damaged", "restore it from a backup"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Ping: %q does not say %q", err, want)
		}
	}
	toldMu.Lock()
	if len(told) != 1 {
		t.Errorf("told %d times of the damage, want once: %v", len(told), told)
	}
	toldMu.Unlock()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	restarted := mustOpenPath(t, path)
	if err := restarted.Ping(ctx); err != nil {
		t.Errorf("after the restart: %v", err)
	}
}
