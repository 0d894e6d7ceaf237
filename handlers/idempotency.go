package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	stdjson "encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

// Idempotency-Key (draft-ietf-httpapi-idempotency-key-header, as Stripe
// has it; docs/design.md says how): a create sent with a key is performed
// once, and the same key with the same request gets its answer again.

const (
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
)

// Defaults of the keys' Config.
const (
	// DefaultIdempotencyTTL is how long a key's answer is kept.
	DefaultIdempotencyTTL = 24 * time.Hour
	// DefaultIdempotencyMaxKeys bounds the answers kept: beyond it the
	// oldest are forgotten first.
	DefaultIdempotencyMaxKeys = 1_000_000
	// keySweepInterval is how often expired answers are forgotten.
	keySweepInterval = time.Minute
	// keyBusyRetryAfter is the Retry-After of a key still in flight: a
	// create is served within a second or two.
	keyBusyRetryAfter = time.Second
)

// answer is what an operation that takes a key sends: the status, the
// headers that matter, and the JSON body. Older versions kept it whole
// for a key; replay still sends those.
type answer struct {
	Status   int                `json:"status"`
	Location string             `json:"location,omitempty"`
	ETag     string             `json:"etag,omitempty"`
	Body     stdjson.RawMessage `json:"body"`
}

// created is the answer to a create: 201, the new resource's Location
// and the ETag of its first version (store/versions.go), and the resource.
func created(location string, v any) (answer, error) {
	a, err := answerJSON(http.StatusCreated, location, v)
	a.ETag = string(appendETag(make([]byte, 0, 24), 1))
	return a, err
}

// answerJSON is an answer of status with v as its JSON body (from its
// AppendJSON where it has one), and a Location when location is not empty.
func answerJSON(status int, location string, v any) (answer, error) {
	a := answer{Status: status, Location: location}
	var err error
	if j, ok := v.(jsonAppender); ok {
		a.Body = j.AppendJSON(make([]byte, 0, 128))
	} else {
		a.Body, err = stdjson.Marshal(v)
	}
	return a, err
}

// send answers with a.
func (a *answer) send(c echo.Context) error {
	h := c.Response().Header()
	if a.Location != "" {
		h[echo.HeaderLocation] = []string{a.Location} // the keys are canonical
	}
	if a.ETag != "" {
		h["Etag"] = []string{a.ETag}
	}
	return respondEncoded(c, a.Status, a.Body)
}

// none is the beside of a record that needs nothing beside it.
type none struct{}

// keyed serves a POST that takes an Idempotency-Key: write makes its
// change with the key (nil without the header) and returns the record the
// store kept for it and what beside it (store.Kept); render makes the
// answer from those, for the first request and every replay alike. With
// admin, the keys are the admin token's, and their answers are kept
// sealed, since some hold a secret. The key is scoped to the credential
// that sent it; while a request with it is served here, another gets 409
// idempotency_in_progress. Only a write that succeeds keeps its answer.
func keyed[R, B any](s *Server, admin bool, write func(echo.Context, *store.IdempotentWrite) (R, B, error), render func(R, B) (answer, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		w, release, err := s.takeKey(c, admin)
		if release != nil {
			defer release()
		}
		var rec R
		var beside B
		if err == nil {
			rec, beside, err = write(c, w)
		}
		if err == store.ErrReplay {
			return replay(c, w.Kept, render)
		}
		if err != nil {
			return err
		}
		a, err := render(rec, beside)
		if err != nil {
			return err
		}
		return a.send(c)
	}
}

// takeKey reads the request's Idempotency-Key (none: nil) and marks it in
// flight until release. A key whose answer is kept already is ErrReplay,
// with the answer in the key's Kept.
func (s *Server) takeKey(c echo.Context, admin bool) (w *store.IdempotentWrite, release func(), err error) {
	r := c.Request()
	values := r.Header[headerIdempotencyKey]
	if len(values) == 0 {
		return nil, nil, nil
	}
	key, err := idempotencyKey(values)
	if err != nil {
		return nil, nil, err
	}
	w = &store.IdempotentWrite{Scope: keyScope(r, admin), Key: key, Fingerprint: fingerprint(c), TTL: s.cfg.IdempotencyTTL, Sealed: admin}
	if admin {
		// The admin token seals the answer: the store keeps only its
		// hash, so a backup cannot open it or check a guess of the key.
		w.Credential = bearerToken(r.Header.Get(echo.HeaderAuthorization))
	}
	release, ok := s.keysInFlight.take(w.Scope + "\x00" + key)
	if !ok {
		return nil, nil, keyBusy(key)
	}
	k, err := s.store.KeptAnswer(r.Context(), w)
	switch {
	case err == nil:
		if w.Kept, err = w.Replay(k); err == nil {
			err = store.ErrReplay
		}
	case store.ErrorCode(err) == store.ENOTFOUND:
		err = nil
	}
	return w, release, err
}

// replay answers with a kept answer: the one render makes from the record
// kept, or one an older version kept whole.
func replay[R, B any](c echo.Context, k store.KeptAnswer, render func(R, B) (answer, error)) error {
	var kept struct {
		store.Kept[*R, B]
		answer
	}
	err := stdjson.Unmarshal(k.Answer, &kept)
	if err == nil && kept.Record != nil {
		kept.answer, err = render(*kept.Record, kept.Beside)
	}
	if err != nil {
		return err
	}
	c.Response().Header()[headerReplayed] = []string{"true"}
	return kept.answer.send(c)
}

func keyBusy(key string) error {
	return apiError(store.EIDEMPOTENCYBUSY, "Idempotency-Key %q: its first request is still being served; retry after the seconds in Retry-After to get its answer", key)
}

// idempotencyKey reads the header: one field, 1 to 255 characters of
// printable ASCII, or the draft's form, a Structured Field string ("...",
// with \" and \\ escapes).
func idempotencyKey(values []string) (string, error) {
	if len(values) > 1 {
		return "", apiError(store.EINVALID, "header Idempotency-Key: send one key, not %d", len(values))
	}
	v := values[0]
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		unquoted, ok := sfString(v[1 : len(v)-1])
		if !ok {
			return "", apiError(store.EINVALID, `header Idempotency-Key: a quoted key may escape only \" and \\`)
		}
		v = unquoted
	}
	switch {
	case v == "":
		return "", apiError(store.EINVALID, "header Idempotency-Key: empty; send a unique key, such as a UUID, or no header")
	case len(v) > store.MaxIdempotencyKey:
		return "", apiError(store.EINVALID, "header Idempotency-Key: %d characters; at most %d are allowed", len(v), store.MaxIdempotencyKey)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return "", apiError(store.EINVALID, "header Idempotency-Key: only printable ASCII characters are allowed (character %d is not)", i+1)
		}
	}
	return v, nil
}

// sfString undoes the escapes of a Structured Field string's content.
func sfString(s string) (string, bool) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 == len(s) || s[i+1] != '"' && s[i+1] != '\\' {
				return "", false
			}
			i++
		case '"':
			return "", false
		}
		out = append(out, s[i])
	}
	return string(out), true
}

// keyScope names the credential a key belongs to: a hash of the API key
// (so that finding it costs no lookup), or on the admin API of the admin
// token (a new token starts with no keys). Every POST needs its
// credential, so no key is anonymous.
func keyScope(r *http.Request, admin bool) string {
	if admin {
		sum := sha256.Sum256([]byte(bearerToken(r.Header.Get(echo.HeaderAuthorization))))
		return "admin:" + hex.EncodeToString(sum[:12])
	}
	sum := sha256.Sum256([]byte(r.Header.Get(headerAPIKey)))
	return "key:" + hex.EncodeToString(sum[:12])
}

// fingerprint identifies the request a key was sent with: its method, path
// and query, and a hash of its body.
func fingerprint(c echo.Context) []byte {
	r := c.Request()
	h := sha256.New()
	h.Write([]byte(r.Method + " " + r.URL.RequestURI() + "\n"))
	if b, ok := r.Body.(*readBodyBytes); ok {
		h.Write(b.data)
	}
	return h.Sum(nil)
}

// keysInFlight are the keys whose requests this instance is serving.
type keysInFlight struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

// take marks key in flight, or says it already is.
func (k *keysInFlight) take(key string) (release func(), ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, busy := k.keys[key]; busy {
		return nil, false
	}
	if k.keys == nil {
		k.keys = map[string]struct{}{}
	}
	k.keys[key] = struct{}{}
	return func() {
		k.mu.Lock()
		delete(k.keys, key)
		k.mu.Unlock()
	}, true
}

// SweepIdempotencyKeys forgets expired answers of Idempotency-Keys, and
// the oldest beyond the bound, every minute until ctx ends. Several
// instances on one database may all run it.
func (s *Server) SweepIdempotencyKeys(ctx context.Context) {
	store.EveryTick(ctx, keySweepInterval, func() {
		for {
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			n, err := s.store.SweepKeptAnswers(sctx, s.cfg.IdempotencyMaxKeys)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("forgetting expired Idempotency-Keys failed; trying again in a minute", "err", err)
				}
				return
			}
			if n < store.MaxSweep {
				return
			}
		}
	})
}
