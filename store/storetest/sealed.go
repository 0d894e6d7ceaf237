package storetest

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"petstore/store"
)

// AdminToken is the credential the suite's sealed writes are made with.
const AdminToken = "pat_the-suite's-admin-token-of-32-characters-at-least"

// AdminKeyed is a write made with an Idempotency-Key on AdminToken's
// behalf, sealed: SealedAgainstGuesses and TestStores make theirs so.
func AdminKeyed(key, fingerprint string) *store.IdempotentWrite {
	return &store.IdempotentWrite{Scope: "admin:1", Key: key, Fingerprint: []byte(fingerprint), TTL: time.Hour, Sealed: true, Credential: AdminToken}
}

// KeptRow is a kept answer as its store's file or table holds it, read
// around the store: what a backup gives away.
type KeptRow struct {
	Scope, Key          string
	Fingerprint, Answer []byte
}

// GuessableKey is the Idempotency-Key SealedAgainstGuesses keeps an API
// key's answer under: one any attacker tries first.
const GuessableKey = "42"

// SealedAgainstGuesses creates an API key with the Idempotency-Key
// GuessableKey, then tries, from the rows alone (the store's kept answers
// as a backup holds them), to check guesses of the key and open its
// answer: by the key's hash, and by every derivation from the key, the
// scope and the admin token's SHA-256. None may work. Then replay (the
// same store, reopened if it likes) gives the client that sends the key
// and the credential again the same secret.
func SealedAgainstGuesses(t *testing.T, s store.Store, rows func() []KeptRow, replay func() store.Store) {
	ctx := context.Background()
	k, secret, err := s.CreateAPIKey(ctx, "bot", AdminKeyed(GuessableKey, "fp-key"))
	if err != nil {
		t.Fatal(err)
	}
	kept := rows()
	if len(kept) != 1 {
		t.Fatalf("%d kept answers read, want 1", len(kept))
	}
	row := kept[0]
	if bytes.Contains(row.Answer, []byte(secret)) || row.Key == GuessableKey {
		t.Fatalf("the answer is kept in clear: %+v", row)
	}
	tokenHash := sha256.Sum256([]byte(AdminToken)) // what the store keeps of the token
	credentials := []string{"", string(tokenHash[:]), hex.EncodeToString(tokenHash[:]), row.Scope}
	for i := 0; i <= 1000; i++ {
		guess := strconv.Itoa(i)
		if sum := sha256.Sum256([]byte(guess)); row.Key == hex.EncodeToString(sum[:]) || row.Key == guess {
			t.Errorf("the stored key checks the guess %q: %s", guess, row.Key)
		}
		var keys [][]byte
		if v1, err := hkdf.Key(sha256.New, []byte(guess), []byte(row.Scope), "petstore idempotency answer v1", 32); err == nil {
			keys = append(keys, v1)
		}
		for _, c := range credentials {
			w := store.IdempotentWrite{Scope: row.Scope, Key: guess, Sealed: true, Credential: c}
			if w.StoredKey() == row.Key {
				t.Errorf("the stored key checks the guess %q with the credential %q", guess, c)
			}
			if both, err := hkdf.Key(sha256.New, []byte(c), []byte(row.Scope), "petstore idempotency answer v2\x00"+guess, 64); err == nil {
				keys = append(keys, both[32:])
			}
		}
		for _, key := range keys {
			if opened := openWith(key, row); opened != nil {
				t.Fatalf("the guess %q opens the kept answer from the rows alone: %s", guess, opened)
			}
		}
	}

	// The client that sends the key and its credential again: the same
	// answer, the same secret.
	again := AdminKeyed(GuessableKey, "fp-key")
	_, _, err = replay().CreateAPIKey(ctx, "bot", again)
	if err != store.ErrReplay {
		t.Fatalf("the same request again: %v, want ErrReplay", err)
	}
	var issued store.Kept[store.APIKey, string]
	if err := json.Unmarshal(again.Kept.Answer, &issued); err != nil || issued.Beside != secret || issued.Record.ID != k.ID {
		t.Errorf("replayed %s (%v), want key %d with its secret", again.Kept.Answer, err, k.ID)
	}
}

// openWith opens a sealed answer (version, nonce, AES-GCM) with key, or
// gives nil; the additional data is tried both ways.
func openWith(key []byte, row KeptRow) []byte {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil
	}
	aead, err := cipher.NewGCM(block)
	if err != nil || len(row.Answer) < 1+aead.NonceSize() {
		return nil
	}
	nonce, sealed := row.Answer[1:1+aead.NonceSize()], row.Answer[1+aead.NonceSize():]
	for _, ad := range [][]byte{nil, append(append([]byte(row.Scope), 0), row.Fingerprint...)} {
		if open, err := aead.Open(nil, nonce, sealed, ad); err == nil {
			return open
		}
	}
	return nil
}
