package boltstore

import (
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
)

// A file an older version wrote holds its answers whole (status, headers,
// body) where this one keeps the record (store.Kept): after the file is
// reopened by this version, a retry with such a key gets that answer as it
// was kept, and writes nothing; once it has expired, the key keeps the new
// form.
func TestAnswersKeptByAnOlderVersionReplay(t *testing.T) {
	db := openTestDB(t)
	old := []byte(`{"status":201,"location":"/categories/9","etag":"\"1\"","body":{"id":9,"name":"cats","description":""}}`)
	now := time.Now()
	put := func(key string, exp time.Time) {
		w := store.IdempotentWrite{Scope: "key:1", Key: key}
		v := encodeKept(store.KeptAnswer{Fingerprint: []byte("fp"), Answer: old, CreatedAt: now, ExpiresAt: exp})
		err := db.write(t.Context(), func(tx *bolt.Tx) error {
			if err := tx.Bucket(bktKept).Put(keptKey(&w), v); err != nil {
				return err
			}
			return tx.Bucket(bktKeptByExpiry).Put(append(binaryTime(exp), keptKey(&w)...), nil)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	put("live", now.Add(time.Hour))
	put("expired", now.Add(-time.Hour))
	db = reopenTestDB(t, db)

	w := &store.IdempotentWrite{Scope: "key:1", Key: "live", Fingerprint: []byte("fp"), TTL: time.Hour}
	if err := db.CreateCategory(t.Context(), &store.Category{Name: "cats"}, w); err != store.ErrReplay || string(w.Kept.Answer) != string(old) {
		t.Fatalf("an older version's answer: %v, replayed %s; want ErrReplay and %s", err, w.Kept.Answer, old)
	}
	if cats, _, err := db.ListCategories(t.Context(), store.Page{}); err != nil || len(cats) != 0 {
		t.Errorf("categories %v (%v) after a replay, want none", cats, err)
	}
	w = &store.IdempotentWrite{Scope: "key:1", Key: "expired", Fingerprint: []byte("fp"), TTL: time.Hour}
	c := store.Category{Name: "dogs"}
	if err := db.CreateCategory(t.Context(), &c, w); err != nil {
		t.Fatal(err)
	}
	k, err := db.KeptAnswer(t.Context(), w)
	if want := `{"record":{"id":1,"name":"dogs"}}`; err != nil || string(k.Answer) != want {
		t.Errorf("the expired key's new answer: %s (%v), want %s", k.Answer, err, want)
	}
}
