package boltstore

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"petstore/store"
	"petstore/store/storetest"
)

// From the data file alone (as a backup holds it), an admin answer kept
// for a guessable Idempotency-Key cannot be found by a guess nor opened;
// after a restart, the client with its key and token gets it replayed.
func TestSealedAnswersResistGuessesFromTheFile(t *testing.T) {
	db := openTestDB(t)
	path := db.Path()
	storetest.SealedAgainstGuesses(t, db, func() []storetest.KeptRow {
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		raw, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		var rows []storetest.KeptRow
		err = raw.View(func(tx *bolt.Tx) error {
			return tx.Bucket(bktKept).ForEach(func(k, v []byte) error {
				scope, key, _ := bytes.Cut(k, []byte{0})
				kept, err := decodeKept(v)
				rows = append(rows, storetest.KeptRow{Scope: string(scope), Key: string(key), Fingerprint: kept.Fingerprint, Answer: kept.Answer})
				return err
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}, func() store.Store {
		db = openTestFile(t, path)
		return db
	})
}

// Answers sealed by the older scheme (under the Idempotency-Key alone) are
// deleted when the file is opened; the others stay.
func TestWeaklySealedAnswersAreForgottenAtOpen(t *testing.T) {
	db := openTestDB(t)
	exp := time.Now().Add(time.Hour)
	put := func(key string, answer []byte) {
		v := encodeKept(store.KeptAnswer{Fingerprint: []byte("fp"), Answer: answer, CreatedAt: time.Now(), ExpiresAt: exp})
		err := db.write(t.Context(), func(tx *bolt.Tx) error {
			if err := tx.Bucket(bktKept).Put([]byte(key), v); err != nil {
				return err
			}
			return tx.Bucket(bktKeptByExpiry).Put(append(binaryTime(exp), key...), nil)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	put("admin:1\x00old", []byte{1, 2, 3})
	put("admin:1\x00new", []byte{2, 2, 3})
	put("key:1\x00order", []byte{1, '{'})
	db = reopenTestDB(t, db)
	err := db.bolt.View(func(tx *bolt.Tx) error {
		var left []string
		tx.Bucket(bktKept).ForEach(func(k, _ []byte) error { left = append(left, string(k)); return nil })
		if want := []string{"admin:1\x00new", "key:1\x00order"}; !slices.Equal(left, want) {
			t.Errorf("kept answers %q, want %q", left, want)
		}
		if n := tx.Bucket(bktKeptByExpiry).Stats().KeyN; n != 2 {
			t.Errorf("%d entries in the expiry index, want 2", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func binaryTime(t time.Time) []byte { return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano())) }
