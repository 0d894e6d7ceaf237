package store

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"
)

// A write made with an Idempotency-Key (its last argument; nil: none)
// checks and keeps its answer in its own transaction, so that no crash can
// separate the change from the answer a retry gets. The store keeps the
// record it wrote (Kept); the caller makes its HTTP answer from that, alike
// for the first request and every replay. An answer that may carry a
// secret is sealed under keys derived from the request's credential
// (docs/design.md says why).

// Error codes of Idempotency-Key.
const (
	// EIDEMPOTENCYREUSED: the key was first used with another request.
	EIDEMPOTENCYREUSED = "idempotency_key_reused"
	// EIDEMPOTENCYBUSY: the key's first request is still being served.
	EIDEMPOTENCYBUSY = "idempotency_in_progress"
)

// MaxIdempotencyKey is the longest Idempotency-Key, in bytes.
const MaxIdempotencyKey = 255

// MaxSweep is the most answers one SweepKeptAnswers forgets, so that a
// sweep after a long pause holds no write for long.
const MaxSweep = 10000

// ErrReplay is a write's answer when its key already has a kept answer for
// the same request: nothing was written, and the IdempotentWrite's Kept is
// the answer to give. Callers that pass a key must handle it.
var ErrReplay = &Error{Code: "idempotent_replay", Message: "this request was already served; its kept answer is replayed"}

// IdempotentWrite is a write's Idempotency-Key.
type IdempotentWrite struct {
	// Scope is who sent the key (keys of two credentials never meet), Key
	// the key itself (stored as StoredKey), Fingerprint what identifies
	// the request (a hash of its method, path and body).
	Scope, Key  string
	Fingerprint []byte
	// Sealed keeps the answer sealed under keys derived from Credential
	// (the request's secret) and Key. Every write of one scope must say
	// the same, so that one key is one row whatever the operation.
	Sealed     bool
	Credential string
	// TTL is how long the answer is kept.
	TTL time.Duration
	// Kept is set by a write answered ErrReplay, its answer open.
	Kept KeptAnswer
}

// Kept is the form of the answer a store keeps for a key: the record its
// write stored, and Beside it what the record's JSON leaves out (a new API
// key's secret). Older versions kept the whole HTTP answer, without
// "record".
type Kept[R, B any] struct {
	Record R `json:"record"`
	Beside B `json:"beside,omitempty"`
}

// KeptAnswer is the answer kept for a key. As a store keeps it, Answer is
// sealed (Keep); as KeptAnswer and Found give it, it is open.
type KeptAnswer struct {
	Fingerprint []byte
	Answer      []byte
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// Idempotency is the keeping of answers to writes made with a key.
type Idempotency interface {
	// KeptAnswer returns the answer kept for w's key, sealed (see
	// Replay), or ENOTFOUND when there is none or it has expired.
	KeptAnswer(ctx context.Context, w *IdempotentWrite) (KeptAnswer, error)
	// KeepAnswer keeps record and beside for key (nil: nothing) in a write
	// of its own, for an operation whose change is not one write of the
	// store. It refuses as a keyed write does.
	KeepAnswer(ctx context.Context, key *IdempotentWrite, record, beside any) error
	// SweepKeptAnswers forgets the answers that expired and, beyond max
	// (when max > 0), the oldest others, at most MaxSweep of them; it
	// returns how many it forgot.
	SweepKeptAnswers(ctx context.Context, max int) (int, error)
}

// Found is what a write with w does when its transaction found k kept for
// the key at now: nil when k has expired (the write replaces it),
// ErrReplay with w.Kept set, or EIDEMPOTENCYREUSED.
func (w *IdempotentWrite) Found(k KeptAnswer, now time.Time) error {
	if !now.Before(k.ExpiresAt) {
		return nil
	}
	k, err := w.Replay(k)
	if err != nil {
		return err
	}
	w.Kept = k
	return ErrReplay
}

// Replay returns k, a live answer kept for w's key, opened, or
// EIDEMPOTENCYREUSED when it answers another request than w's.
func (w *IdempotentWrite) Replay(k KeptAnswer) (KeptAnswer, error) {
	if !bytes.Equal(k.Fingerprint, w.Fingerprint) {
		return KeptAnswer{}, Errorf(EIDEMPOTENCYREUSED, "Idempotency-Key %q was first used with another request (method, path or body); send a new request with a new key", w.Key)
	}
	return w.open(k)
}

// Keep returns what to store for w's answer to record and beside, written
// at now: their Kept form, sealed if w is.
func (w *IdempotentWrite) Keep(record, beside any, now time.Time) (KeptAnswer, error) {
	answer, err := json.Marshal(Kept[any, any]{record, beside})
	if err != nil {
		return KeptAnswer{}, err
	}
	if !w.Sealed {
		return KeptAnswer{Fingerprint: w.Fingerprint, Answer: answer, CreatedAt: now, ExpiresAt: now.Add(w.TTL)}, nil
	}
	if w.Credential == "" {
		return KeptAnswer{}, errNoCredential
	}
	aead := w.aead()
	sealed := make([]byte, 1+nonceSize, 1+nonceSize+len(answer)+aead.Overhead())
	sealed[0] = sealedV2
	_, _ = rand.Read(sealed[1:]) // never fails (crypto/rand)
	sealed = aead.Seal(sealed, sealed[1:], answer, w.additional())
	return KeptAnswer{Fingerprint: w.Fingerprint, Answer: sealed, CreatedAt: now, ExpiresAt: now.Add(w.TTL)}, nil
}

// open returns k, kept for w's key and request, with its answer opened.
func (w *IdempotentWrite) open(k KeptAnswer) (KeptAnswer, error) {
	if !w.Sealed {
		return k, nil
	}
	aead := w.aead()
	s := k.Answer
	if len(s) < 1+nonceSize || s[0] != sealedV2 {
		return KeptAnswer{}, errKeptUnreadable
	}
	open, err := aead.Open(nil, s[1:1+nonceSize], s[1+nonceSize:], w.additional())
	if err != nil {
		return KeptAnswer{}, errKeptUnreadable
	}
	k.Answer = open
	return k, nil
}

// StoredKey is what a store keeps in place of w's key: the key, or, for a
// sealed answer, a lookup key that says nothing without the credential.
func (w *IdempotentWrite) StoredKey() string {
	if !w.Sealed {
		return w.Key
	}
	lookup, _ := w.keys()
	return hex.EncodeToString(lookup)
}

// A sealed answer is its version, the nonce, then AES-256-GCM's
// ciphertext and tag. Version 1, keyed by the Idempotency-Key alone, is no
// longer written or read.
const (
	sealedV2  = 2
	nonceSize = 12
)

var errKeptUnreadable = errors.New("the answer kept for this Idempotency-Key cannot be read; it may be damaged")

var errNoCredential = errors.New("idempotency: a sealed answer needs the request's credential")

// keys derives a sealed answer's lookup key and cipher key from the
// credential, the scope and the Idempotency-Key: a database that holds
// neither the credential nor the key can check no guess of either.
func (w *IdempotentWrite) keys() (lookup, seal []byte) {
	k, err := hkdf.Key(sha256.New, []byte(w.Credential), []byte(w.Scope), "petstore idempotency answer v2\x00"+w.Key, 64)
	if err != nil {
		panic(err) // only for a length HKDF-SHA256 cannot give
	}
	return k[:32], k[32:]
}

// aead is AES-256-GCM under the seal key: its 32 bytes and AES's 16-byte
// blocks are what NewCipher and NewGCM take, so neither fails.
func (w *IdempotentWrite) aead() cipher.AEAD {
	_, key := w.keys()
	block, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCM(block)
	return aead
}

// additional binds a sealed answer to its row, so that it does not open
// moved under another key or another request.
func (w *IdempotentWrite) additional() []byte {
	ad := make([]byte, 0, len(w.Scope)+1+len(w.Fingerprint))
	ad = append(ad, w.Scope...)
	ad = append(ad, 0)
	return append(ad, w.Fingerprint...)
}
