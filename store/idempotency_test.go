package store

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A kept answer is sealed: it holds neither the answer nor the key, it
// opens only for its own key, scope and request, and a changed byte is
// refused. Two keeps of one answer differ (a fresh nonce each).
func TestKeptAnswersAreSealed(t *testing.T) {
	const adminToken = "pat_an-admin-token-of-at-least-32-characters"
	const secret = "psk_the-secret-of-a-new-api-key"
	write := func(scope, key, fingerprint string) *IdempotentWrite {
		return &IdempotentWrite{
			Scope: scope, Key: key, Fingerprint: []byte(fingerprint), TTL: time.Hour, Sealed: true,
			Credential: adminToken,
		}
	}
	record := map[string]string{"secret": secret}
	w := write("admin:1", "0f8a4c1e-8d3b-4f5e-9a61-2b7c9d0e4f13", "fp")
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	k, err := w.Keep(record, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(k.Answer, []byte(secret)) || bytes.Contains(k.Answer, []byte(w.Key)) {
		t.Fatalf("sealed answer holds the secret or the key: %q", k.Answer)
	}
	if sk := w.StoredKey(); strings.Contains(sk, w.Key) || len(sk) != 64 {
		t.Errorf("StoredKey %q", sk)
	}
	if k2, _ := w.Keep(record, nil, now); bytes.Equal(k2.Answer, k.Answer) {
		t.Error("two keeps of one answer are the same bytes")
	}
	open, err := w.Replay(k)
	if err != nil || !bytes.Contains(open.Answer, []byte(secret)) {
		t.Fatalf("Replay: %q, %v", open.Answer, err)
	}
	if err := write("admin:1", w.Key, "fp").Found(k, now); err != ErrReplay {
		t.Errorf("Found: %v, want ErrReplay", err)
	}
	if _, err := write("admin:1", w.Key, "other").Replay(k); ErrorCode(err) != EIDEMPOTENCYREUSED {
		t.Errorf("another request: %v, want %s", err, EIDEMPOTENCYREUSED)
	}
	for name, other := range map[string]*IdempotentWrite{
		"another scope": write("admin:2", w.Key, "fp"),
		"another key":   write("admin:1", w.Key+"x", "fp"),
		"another token": func() *IdempotentWrite { o := write("admin:1", w.Key, "fp"); o.Credential += "x"; return o }(),
	} {
		if _, err := other.Replay(k); err != errKeptUnreadable {
			t.Errorf("%s: %v, want %v", name, err, errKeptUnreadable)
		}
	}
	for i := range k.Answer {
		bad := k
		bad.Answer = bytes.Clone(k.Answer)
		bad.Answer[i] ^= 1
		if _, err := w.Replay(bad); err != errKeptUnreadable {
			t.Fatalf("byte %d changed: %v, want %v", i, err, errKeptUnreadable)
		}
	}
	// An answer kept in clear where a sealed one belongs is refused.
	plain := k
	plain.Answer = []byte(`{"secret":"x"}`)
	if _, err := w.Replay(plain); err != errKeptUnreadable {
		t.Errorf("a clear answer: %v", err)
	}

	// A write that is not sealed keeps its answer as it is, under its key.
	clearWrite := write("key:1", "order-1", "fp")
	clearWrite.Sealed = false
	k, err = clearWrite.Keep(record, nil, now)
	if err != nil || string(k.Answer) != `{"record":{"secret":"`+secret+`"}}` || clearWrite.StoredKey() != "order-1" {
		t.Errorf("unsealed: kept %q under %q, %v", k.Answer, clearWrite.StoredKey(), err)
	}
	if open, err := clearWrite.Replay(k); err != nil || !bytes.Equal(open.Answer, k.Answer) {
		t.Errorf("unsealed Replay: %q, %v", open.Answer, err)
	}
}
