package store_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"petstore/store"
)

// Marks saved to their file come back as they were; a file of another
// store, or not petstore's JSON, is refused with a message that says what
// to do; a pardon older than the revocation does not undo it.
func TestMarksFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "marks.json")
	m, err := store.LoadMarks(path, "db.internal:5432/petstore")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	hash := [32]byte{1, 2, 3}
	m.Acked(store.ResPets, 42)
	m.Acked(store.ResPets, 7) // never down
	m.SetHorizon(900)
	if !m.Revoke(store.Revocation{SHA256: hash[:], KeyID: 5, RevokedAt: at}) {
		t.Fatal("a new revocation is not new")
	}
	if err := m.Save("db.internal:5432/petstore"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("the marks file: %v %v (it names revoked keys' hashes: private)", fi, err)
	}
	back, err := store.LoadMarks(path, "db.internal:5432/petstore")
	if err != nil {
		t.Fatal(err)
	}
	if back.Mark(store.ResPets) != 42 || back.Horizon() != 900 || !back.Revoked(hash) || back.Revocations()[0].KeyID != 5 {
		t.Errorf("the marks read back: pets %d, horizon %d, revoked %v %v", back.Mark(store.ResPets), back.Horizon(), back.Revoked(hash), back.Revocations())
	}
	if back.Pardon(hash, at.Add(-time.Second)) || !back.Revoked(hash) {
		t.Error("a pardon from before the revocation undid it")
	}
	if !back.Pardon(hash, at.Add(time.Second)) || back.Revoked(hash) {
		t.Error("a pardon after the revocation did not undo it")
	}

	if _, err := store.LoadMarks(path, "other:5432/petstore"); err == nil || !strings.Contains(err.Error(), "give each store its own file") {
		t.Errorf("the marks of another store: %v", err)
	}
	if err := os.WriteFile(path, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := store.LoadMarks(path, "db.internal:5432/petstore"); err == nil || !strings.Contains(err.Error(), "remove the file") {
		t.Errorf("a damaged marks file: %v", err)
	}
	if m, err := store.LoadMarks(filepath.Join(t.TempDir(), "none.json"), "x"); err != nil || m.Mark(store.ResPets) != 0 {
		t.Errorf("a missing marks file: %v", err)
	}
}
