package store

import (
	"bytes"
	"context"
	"time"
)

// A write made with an Idempotency-Key keeps its answer in the write's own
// transaction, so that no crash can separate the change from the answer a
// retry will get. The key rides in the write's context (WithIdempotency),
// as an If-Match condition does, and every create of every store checks it
// inside that transaction: an answer already kept for the key is replayed
// instead of the write (ErrReplay), one kept for another request refuses it
// (EIDEMPOTENCYREUSED). What a key's answer is made of (an HTTP status,
// headers and body) is the caller's business: the store keeps bytes.

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
	// the key itself, Fingerprint what identifies the request (a hash of
	// its method, path and body).
	Scope, Key  string
	Fingerprint []byte
	// TTL is how long the answer is kept.
	TTL time.Duration
	// Answer makes the answer to keep from the record the write stored (a
	// *Pet, *Category or *Order, complete with its id and version). It runs
	// inside the write's transaction, perhaps more than once, and must
	// have no other effect.
	Answer func(record any) ([]byte, error)
	// Kept is set by a write answered ErrReplay.
	Kept KeptAnswer
}

// KeptAnswer is the answer kept for a key.
type KeptAnswer struct {
	Fingerprint []byte
	Answer      []byte
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// Idempotency is the keeping of answers to writes made with a key.
type Idempotency interface {
	// KeptAnswer returns the answer kept for scope's key, or ENOTFOUND when
	// there is none or it has expired.
	KeptAnswer(ctx context.Context, scope, key string) (KeptAnswer, error)
	// SweepKeptAnswers forgets the answers that expired and, beyond max
	// (when max > 0), the oldest others, at most MaxSweep of them; it
	// returns how many it forgot.
	SweepKeptAnswers(ctx context.Context, max int) (int, error)
}

type idempotencyKey struct{}

// WithIdempotency returns ctx carrying w, for the write made with it.
func WithIdempotency(ctx context.Context, w *IdempotentWrite) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, w)
}

// IdempotencyOf returns the IdempotentWrite ctx carries, or nil.
func IdempotencyOf(ctx context.Context) *IdempotentWrite {
	w, _ := ctx.Value(idempotencyKey{}).(*IdempotentWrite)
	return w
}

// Found is what a write with w does when its transaction found k kept for
// the key at now: nil when k has expired (the write goes ahead and
// replaces it), ErrReplay with w.Kept set when k answers the same
// request, EIDEMPOTENCYREUSED when it answers another.
func (w *IdempotentWrite) Found(k KeptAnswer, now time.Time) error {
	if !now.Before(k.ExpiresAt) {
		return nil
	}
	if err := w.Match(k); err != nil {
		return err
	}
	w.Kept = k
	return ErrReplay
}

// Match refuses k, a live answer kept for w's key, when it answers another
// request than w's (EIDEMPOTENCYREUSED).
func (w *IdempotentWrite) Match(k KeptAnswer) error {
	if !bytes.Equal(k.Fingerprint, w.Fingerprint) {
		return Errorf(EIDEMPOTENCYREUSED, "Idempotency-Key %q was first used with another request (method, path or body); send a new request with a new key", w.Key)
	}
	return nil
}

// Keep returns what to store for w's answer to record, written at now.
func (w *IdempotentWrite) Keep(record any, now time.Time) (KeptAnswer, error) {
	answer, err := w.Answer(record)
	if err != nil {
		return KeptAnswer{}, err
	}
	return KeptAnswer{Fingerprint: w.Fingerprint, Answer: answer, CreatedAt: now, ExpiresAt: now.Add(w.TTL)}, nil
}
