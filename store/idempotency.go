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

// A write made with an Idempotency-Key keeps its answer in the write's own
// transaction, so that no crash can separate the change from the answer a
// retry will get. The key is the last argument of each write that takes
// one (nil: none), and every such write of every store checks it inside
// that transaction: an answer already kept for the key is replayed
// instead of the write (ErrReplay), one kept for another request refuses it
// (EIDEMPOTENCYREUSED). The store keeps the record it wrote (Kept), and the
// caller makes its answer (an HTTP status, headers and body) from that,
// alike for the first request and every replay.
//
// An answer that may carry a secret kept otherwise only as a hash (a new
// API key's, a webhook's signing secret) is sealed (Sealed), under keys
// derived from the request's credential and key: docs/design.md says why
// and what that guards against.

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
// sweep after a long pause holds no write for long: a sweep that forgot
// this many may have left more.
const MaxSweep = 10000

// ErrReplay is a write's answer when its key already has a kept answer for
// the same request: nothing was written, and the IdempotentWrite's Kept is
// the answer to give. It is not an API error code; callers that pass a key
// must handle it.
var ErrReplay = &Error{Code: "idempotent_replay", Message: "this request was already served; its kept answer is replayed"}

// IdempotentWrite is a write's Idempotency-Key.
type IdempotentWrite struct {
	// Scope is who sent the key (keys of two credentials never meet), Key
	// the key itself (stored as StoredKey), Fingerprint what identifies
	// the request (a hash of its method, path and body).
	Scope, Key  string
	Fingerprint []byte
	// Sealed keeps the answer sealed, under a key derived from Credential
	// and Key: for answers that may hold a secret. Every write of one scope
	// must say the same, so that one key is one row whatever the operation.
	Sealed bool
	// Credential is the secret the request authenticated with, which the
	// store keeps only as a hash; a sealed answer's keys are derived from
	// it. A sealed write without one is refused.
	Credential string
	// TTL is how long the answer is kept.
	TTL time.Duration
	// Kept is set by a write answered ErrReplay, its answer open.
	Kept KeptAnswer
}

// Kept is the form of the answer a store keeps for a key: the record its
// write stored, and Beside it what an answer needs that the record's JSON
// leaves out (a new API key's secret, a new delivery's event id). Older
// versions kept the whole HTTP answer, a JSON object without "record".
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
	// KeepAnswer keeps record and beside (Kept) for key (nil: it does
	// nothing) in a write of its own, for an operation whose change is not
	// one write of the store: the answer is kept after the change, not
	// with it. It answers ErrReplay or EIDEMPOTENCYREUSED as a keyed write
	// does when the key already has an answer.
	KeepAnswer(ctx context.Context, key *IdempotentWrite, record, beside any) error
	// SweepKeptAnswers forgets the answers that expired and, beyond max
	// (when max > 0), the oldest others, at most MaxSweep of them; it
	// returns how many it forgot.
	SweepKeptAnswers(ctx context.Context, max int) (int, error)
}

// Found is what a write with w does when its transaction found k kept for
// the key at now: nil when k has expired (the write goes ahead and
// replaces it), ErrReplay with w.Kept set when k answers the same
// request, EIDEMPOTENCYREUSED when it answers another.
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
	aead, err := w.aead()
	if err != nil {
		return KeptAnswer{}, err
	}
	sealed := make([]byte, 1+nonceSize, 1+nonceSize+len(answer)+aead.Overhead())
	sealed[0] = sealedV2
	if _, err := rand.Read(sealed[1:]); err != nil {
		return KeptAnswer{}, err
	}
	sealed = aead.Seal(sealed, sealed[1:], answer, w.additional())
	return KeptAnswer{Fingerprint: w.Fingerprint, Answer: sealed, CreatedAt: now, ExpiresAt: now.Add(w.TTL)}, nil
}

// open returns k, kept for w's key and request, with its answer opened.
func (w *IdempotentWrite) open(k KeptAnswer) (KeptAnswer, error) {
	if !w.Sealed {
		return k, nil
	}
	aead, err := w.aead()
	if err != nil {
		return KeptAnswer{}, err
	}
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
// sealed answer, the hex of a lookup key derived with the seal's (see
// keys), which says nothing of the key without the credential.
func (w *IdempotentWrite) StoredKey() string {
	if !w.Sealed {
		return w.Key
	}
	lookup, _ := w.keys()
	return hex.EncodeToString(lookup)
}

// The form of a sealed answer: its version, the nonce, then AES-256-GCM's
// ciphertext and tag. Version 1 was keyed by the Idempotency-Key alone
// and stored under its plain SHA-256; it is no longer written or read.
const (
	sealedV2  = 2
	nonceSize = 12
)

// errKeptUnreadable: a kept answer that does not open with its own key
// was damaged (or written by something else).
var errKeptUnreadable = errors.New("the answer kept for this Idempotency-Key cannot be read; it may be damaged")

// errNoCredential: a sealed answer derives its keys from the credential,
// and is never kept under the Idempotency-Key alone.
var errNoCredential = errors.New("idempotency: a sealed answer needs the request's credential")

// keys derives a sealed answer's lookup key (StoredKey) and cipher key
// from the credential, salted with the scope, for the Idempotency-Key:
// a database that holds neither the credential nor the key finds nothing
// to check a guess of either against.
func (w *IdempotentWrite) keys() (lookup, seal []byte) {
	k, err := hkdf.Key(sha256.New, []byte(w.Credential), []byte(w.Scope), "petstore idempotency answer v2\x00"+w.Key, 64)
	if err != nil {
		panic(err) // only for a length HKDF-SHA256 cannot give
	}
	return k[:32], k[32:]
}

// aead is the cipher of w's answers.
func (w *IdempotentWrite) aead() (cipher.AEAD, error) {
	_, key := w.keys()
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// additional binds a sealed answer to its row, so that it does not open
// moved under another key or another request.
func (w *IdempotentWrite) additional() []byte {
	ad := make([]byte, 0, len(w.Scope)+1+len(w.Fingerprint))
	ad = append(ad, w.Scope...)
	ad = append(ad, 0)
	return append(ad, w.Fingerprint...)
}
