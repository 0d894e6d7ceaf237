package certs_test

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"

	"petstore/domains/certs"
	"petstore/domains/domaintest"
	"petstore/store/postgres/pgtest"
)

// forEachStore runs a test of the certificate storage on each store: a
// bbolt file, and a PostgreSQL database (where PostgreSQL is installed).
// Lock tests get two handles on the same data, as two instances would
// have; on bbolt, whose file one process owns, both are the same DB.
func forEachStore(t *testing.T, test func(t *testing.T, a, b certmagic.Storage)) {
	t.Run("bbolt", func(t *testing.T) {
		s := certs.Storage(domaintest.OpenStore(t))
		test(t, s, s)
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.URL(t)
		open := func() certmagic.Storage { return certs.Storage(domaintest.OpenPostgres(t, url)) }
		test(t, open(), open())
	})
}

func mustStore(tb testing.TB, s certmagic.Storage, keys ...string) {
	tb.Helper()
	ctx := context.Background()
	for _, k := range keys {
		if err := s.Store(ctx, k, []byte("value of "+k)); err != nil {
			tb.Fatal(err)
		}
	}
}

func TestCertStorage_StoreLoadStat(t *testing.T) { forEachStore(t, testStoreLoadStat) }

func testStoreLoadStat(t *testing.T, s, _ certmagic.Storage) {
	ctx := context.Background()
	now := time.Date(2026, 2, 3, 4, 5, 6, 7, time.UTC)

	if err := s.Store(ctx, "acme/ca/users/me/me.key", []byte("KEY")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Load(ctx, "acme/ca/users/me/me.key"); err != nil || string(got) != "KEY" {
		t.Fatalf("Load: %q, %v", got, err)
	}
	// Overwrite.
	if err := s.Store(ctx, "acme/ca/users/me/me.key", []byte("KEY2!")); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Load(ctx, "acme/ca/users/me/me.key"); string(got) != "KEY2!" {
		t.Fatalf("Load after overwrite: %q", got)
	}

	info, err := s.Stat(ctx, "acme/ca/users/me/me.key")
	if err != nil || info.Key != "acme/ca/users/me/me.key" || info.Size != 5 || !info.IsTerminal ||
		info.Modified.Before(now.Add(-time.Hour*24*365*10)) || time.Since(info.Modified) > time.Minute {
		t.Fatalf("Stat of a file: %+v, %v", info, err)
	}
	info, err = s.Stat(ctx, "acme/ca")
	if err != nil || info.Key != "acme/ca" || info.IsTerminal {
		t.Fatalf("Stat of a directory: %+v, %v", info, err)
	}

	for _, k := range []string{"acme/ca/users/me/me.ke", "acme/c", "nothing", "acme/ca/users/me/me.key/deeper"} {
		if _, err := s.Load(ctx, k); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Load(%q): %v, want fs.ErrNotExist", k, err)
		}
		if _, err := s.Stat(ctx, k); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat(%q): %v, want fs.ErrNotExist", k, err)
		}
		if s.Exists(ctx, k) {
			t.Fatalf("Exists(%q) = true", k)
		}
	}
	for _, k := range []string{"acme", "acme/ca", "acme/ca/users/me", "acme/ca/users/me/me.key"} {
		if !s.Exists(ctx, k) {
			t.Fatalf("Exists(%q) = false", k)
		}
	}
	if _, err := s.Load(ctx, "acme/ca"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load of a directory: %v, want fs.ErrNotExist", err)
	}
}

// certTree is the files the List and Delete tests start from. Some names
// share a string prefix with a directory, not a path prefix.
var certTree = []string{
	"certificates/ca/a.com/a.com.crt",
	"certificates/ca/a.com/a.com.key",
	"certificates/ca/a.com.evil/x",
	"certificates/ca/a.comb",
	"certificates/ca/b.com/b.com.crt",
	"certificates/ca2/c.com/c.com.crt",
	"certificates/top.json",
	"certificatesX/other",
	"ocsp/a.com",
}

func TestCertStorage_List(t *testing.T) { forEachStore(t, testList) }

func testList(t *testing.T, s, _ certmagic.Storage) {
	ctx := context.Background()
	mustStore(t, s, certTree...)
	for _, tc := range []struct {
		prefix    string
		recursive bool
		want      []string
	}{
		{"certificates", false, []string{"certificates/ca", "certificates/ca2", "certificates/top.json"}},
		{"certificates/ca", false, []string{"certificates/ca/a.com", "certificates/ca/a.com.evil", "certificates/ca/a.comb", "certificates/ca/b.com"}},
		{"certificates/ca/a.com", false, []string{"certificates/ca/a.com/a.com.crt", "certificates/ca/a.com/a.com.key"}},
		{"certificates", true, []string{
			"certificates/ca",
			"certificates/ca/a.com",
			"certificates/ca/a.com.evil",
			"certificates/ca/a.com.evil/x",
			"certificates/ca/a.com/a.com.crt",
			"certificates/ca/a.com/a.com.key",
			"certificates/ca/a.comb",
			"certificates/ca/b.com",
			"certificates/ca/b.com/b.com.crt",
			"certificates/ca2",
			"certificates/ca2/c.com",
			"certificates/ca2/c.com/c.com.crt",
			"certificates/top.json",
		}},
		{"", false, []string{"certificates", "certificatesX", "ocsp"}},
		{"certificates/top.json", false, []string{}},
	} {
		got, err := s.List(ctx, tc.prefix, tc.recursive)
		if err != nil {
			t.Fatalf("List(%q, %v): %v", tc.prefix, tc.recursive, err)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Fatalf("List(%q, %v):\n got %q\nwant %q", tc.prefix, tc.recursive, got, tc.want)
		}
	}
	if _, err := s.List(ctx, "certificates/nope", false); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("List of a missing prefix: %v, want fs.ErrNotExist", err)
	}
}

func TestCertStorage_Delete(t *testing.T) { forEachStore(t, testDelete) }

func testDelete(t *testing.T, s, _ certmagic.Storage) {
	ctx := context.Background()
	mustStore(t, s, certTree...)
	// A directory goes with everything under it, and only that.
	if err := s.Delete(ctx, "certificates/ca/a.com"); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"certificates/ca/a.com/a.com.crt", "certificates/ca/a.com/a.com.key"} {
		if s.Exists(ctx, k) {
			t.Fatalf("%q survived the deletion of its directory", k)
		}
	}
	if s.Exists(ctx, "certificates/ca/a.com") {
		t.Fatal("a deleted directory still exists")
	}
	for _, k := range []string{"certificates/ca/a.com.evil/x", "certificates/ca/a.comb", "certificates/ca/b.com/b.com.crt"} {
		if !s.Exists(ctx, k) {
			t.Fatalf("%q was deleted with another key's directory", k)
		}
	}
	// A file.
	if err := s.Delete(ctx, "certificates/ca/a.comb"); err != nil {
		t.Fatal(err)
	}
	if s.Exists(ctx, "certificates/ca/a.comb") {
		t.Fatal("a deleted file still exists")
	}
	// A missing key is not an error.
	if err := s.Delete(ctx, "no/such/key"); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}
}

func TestCertStorage_Lock(t *testing.T) { forEachStore(t, testLock) }

// testLock locks through one handle and waits through the other.
func testLock(t *testing.T, s, other certmagic.Storage) {
	ctx := context.Background()
	if err := s.Lock(ctx, "issue_cert_a.com"); err != nil {
		t.Fatal(err)
	}
	// Another name is independent.
	if err := s.Lock(ctx, "issue_cert_b.com"); err != nil {
		t.Fatal(err)
	}

	got := make(chan error, 1)
	go func() { got <- other.Lock(ctx, "issue_cert_a.com") }()
	select {
	case err := <-got:
		t.Fatalf("a second Lock of a held name returned %v without waiting", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := s.Unlock(ctx, "issue_cert_a.com"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Unlock did not wake the waiting locker")
	}

	// A waiter gives up when its context ends, and the lock stays held.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := s.Lock(short, "issue_cert_a.com"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock with an expiring context: %v, want context.DeadlineExceeded", err)
	}
	tl := s.(certmagic.TryLocker)
	if ok, err := tl.TryLock(ctx, "issue_cert_a.com"); ok || err != nil {
		t.Fatalf("TryLock of a held lock: %v, %v", ok, err)
	}
	if err := other.Unlock(ctx, "issue_cert_a.com"); err != nil {
		t.Fatal(err)
	}
	if ok, err := tl.TryLock(ctx, "issue_cert_a.com"); !ok || err != nil {
		t.Fatalf("TryLock of a free lock: %v, %v", ok, err)
	}
	if err := s.Unlock(ctx, "never-locked"); err == nil {
		t.Fatal("Unlock of a lock that is not held succeeded")
	}
}
