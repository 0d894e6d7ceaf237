package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"petstore/store"
)

func testKeyValue(t *testing.T, s store.Store) {
	before := time.Now().Add(-time.Minute)
	keys := []string{"acme/ca/users/me/key", "certs/a.example/a.example.crt", "certs/a.example/a.example.key", "certs/a.example.org/x.crt", "certs/b.example/b.example.crt", "certs"}
	for _, k := range keys {
		check(t, s.KVPut(ctx, k, []byte("value of "+k)))
	}
	check(t, s.KVPut(ctx, "certs/b.example/b.example.crt", []byte("new")))
	if v := must(s.KVGet(ctx, "certs/b.example/b.example.crt"))(t); string(v) != "new" {
		t.Errorf("KVGet after an overwrite: %q", v)
	}
	info := must(s.KVStat(ctx, "certs/a.example/a.example.key"))(t)
	if info.Key != "certs/a.example/a.example.key" || info.Size != int64(len("value of certs/a.example/a.example.key")) || info.Modified.Before(before) || info.Modified.After(time.Now().Add(time.Minute)) {
		t.Errorf("KVStat: %+v", info)
	}
	_, err := s.KVGet(ctx, "certs/none")
	wantError(t, "KVGet of a missing key", err, store.ENOTFOUND, `key "certs/none" does not exist`)
	_, err = s.KVStat(ctx, "certs/none")
	wantError(t, "KVStat of a missing key", err, store.ENOTFOUND, `key "certs/none" does not exist`)

	all := slices.Sorted(slices.Values(keys))
	if got := must(s.KVKeys(ctx, ""))(t); !slices.Equal(got, all) {
		t.Errorf("KVKeys(\"\"): %v, want %v", got, all)
	}
	if got, want := must(s.KVKeys(ctx, "certs/a.example"))(t), []string{"certs/a.example/a.example.crt", "certs/a.example/a.example.key"}; !slices.Equal(got, want) {
		t.Errorf("KVKeys(certs/a.example): %v, want %v", got, want)
	}
	if got := must(s.KVKeys(ctx, "nothing"))(t); got == nil || len(got) != 0 {
		t.Errorf("KVKeys of an empty prefix: %v", got)
	}
	// Deleting a key deletes what is under it, not its namesakes.
	check(t, s.KVDelete(ctx, "certs/a.example"))
	if got, want := must(s.KVKeys(ctx, "certs"))(t), []string{"certs/a.example.org/x.crt", "certs/b.example/b.example.crt"}; !slices.Equal(got, want) {
		t.Errorf("after deleting certs/a.example: %v, want %v", got, want)
	}
	check(t, s.KVDelete(ctx, "certs"))
	if got := must(s.KVKeys(ctx, ""))(t); !slices.Equal(got, []string{"acme/ca/users/me/key"}) {
		t.Errorf("after deleting certs: %v", got)
	}
	check(t, s.KVDelete(ctx, "never/there"))
}

func testLocks(t *testing.T, s store.Store) {
	check(t, s.Lock(ctx, "issue_cert_a.example"))
	if ok := must(s.TryLock(ctx, "issue_cert_a.example"))(t); ok {
		t.Error("TryLock took a held lock")
	}
	if ok := must(s.TryLock(ctx, "issue_cert_b.example"))(t); !ok {
		t.Error("TryLock did not take a free lock")
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := s.Lock(short, "issue_cert_a.example"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lock of a held lock until the context ends: %v", err)
	}
	got := make(chan error, 1)
	go func() { got <- s.Lock(ctx, "issue_cert_a.example") }()
	check(t, s.Unlock(ctx, "issue_cert_a.example"))
	select {
	case err := <-got:
		check(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("a waiting Lock did not get the lock once it was released")
	}
	check(t, s.Unlock(ctx, "issue_cert_a.example"))
	check(t, s.Unlock(ctx, "issue_cert_b.example"))
	wantError(t, "unlocking a free lock", s.Unlock(ctx, "issue_cert_a.example"), store.ECONFLICT, `lock "issue_cert_a.example" is not held`)
	if ok := must(s.TryLock(ctx, "issue_cert_a.example"))(t); !ok {
		t.Error("TryLock did not take a released lock")
	}
	check(t, s.Unlock(ctx, "issue_cert_a.example"))
}
