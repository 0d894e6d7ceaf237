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

// Idempotency-Key (docs/design.md): a create sent with a key is performed
// once, and the same key with the same request gets its answer again.

const (
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
)

// Defaults of the keys' Config.
const (
	// DefaultIdempotencyTTL is how long a key's answer is kept.
	DefaultIdempotencyTTL = 24 * time.Hour
	// DefaultIdempotencyMaxKeys bounds the answers kept, oldest forgotten
	// first.
	DefaultIdempotencyMaxKeys = 1_000_000
	// keySweepInterval is how often expired answers are forgotten.
	keySweepInterval = time.Minute
	// keyBusyRetryAfter: a create is served within a second or two.
	keyBusyRetryAfter = time.Second
)

// answer is what an operation taking a key sends: status, the headers
// that matter, the JSON body. Older versions' whole answers still replay.
type answer struct {
	Status   int                `json:"status"`
	Location string             `json:"location,omitempty"`
	ETag     string             `json:"etag,omitempty"`
	Body     stdjson.RawMessage `json:"body"`
}

// created is a create's answer: 201, Location, the first version's ETag,
// and the resource.
func created(location string, v any) (answer, error) {
	a, err := answerJSON(http.StatusCreated, location, v)
	a.ETag = string(appendETag(make([]byte, 0, 24), 1))
	return a, err
}

// answerJSON is an answer of status with v as JSON body, and a Location
// when location is not empty.
func answerJSON(status int, location string, v any) (answer, error) {
	if j, ok := v.(jsonAppender); ok {
		return answer{Status: status, Location: location, Body: j.AppendJSON(make([]byte, 0, 128))}, nil
	}
	body, err := stdjson.Marshal(v)
	return answer{Status: status, Location: location, Body: body}, err
}

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
// change with the key (nil without one) and returns what the store kept,
// render makes the answer from it, first time and replay alike. Admin
// answers are sealed by the admin token (some hold secrets). Keys belong
// to their credential; one in flight here gives another request 409.
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

// takeKey reads the Idempotency-Key (none: nil) and marks it in flight
// until release; a kept one is ErrReplay, its answer in the key's Kept.
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
		// The store keeps only the token's hash, so a backup cannot open the
		// answer or check a guess of the key.
		w.Credential = bearerToken(credential(r.Header, echo.HeaderAuthorization))
	}
	release, ok := s.keysInFlight.take(w.Scope + "\x00" + key)
	if !ok {
		return nil, nil, apiError(store.EIDEMPOTENCYBUSY, "Idempotency-Key %q: its first request is still being served; retry after the seconds in Retry-After to get its answer", key)
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

// replay answers with a kept answer, rendered from the record or kept
// whole.
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

// idempotencyKey reads the header: one field, 1 to 255 printable ASCII
// characters, or the draft's Structured Field string.
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

// keyScope names a key's credential: a hash of the API key (no lookup) or
// of the admin token (a new token has no keys).
func keyScope(r *http.Request, admin bool) string {
	kind, secret := "key:", credential(r.Header, headerAPIKey)
	if admin {
		kind, secret = "admin:", bearerToken(credential(r.Header, echo.HeaderAuthorization))
	}
	sum := sha256.Sum256([]byte(secret))
	return kind + hex.EncodeToString(sum[:12])
}

// fingerprint identifies a key's request: method, path, query, body hash.
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

// SweepIdempotencyKeys forgets expired answers, and the oldest beyond the
// bound, every minute until ctx ends; any number of instances may run it.
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
