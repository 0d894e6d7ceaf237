package handlers

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/labstack/echo/v4"

	"petstore/handlers/clientkey"
)

// guardOperatorPaths asks for the admin token on operator paths before
// anything else answers: Echo's OPTIONS and 405 answers, the admin
// document, and paths that do not exist. The operations of the admin
// document are left to the validator, which checks the token itself after
// the body is read (see readBody).
func (s *Server) guardOperatorPaths(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if !tokenPath(r.URL.Path) || s.validated[routeKey(r.Method, c.Path())] {
			return next(c)
		}
		if err := s.checkAdminToken(r); err == errBadCredentials {
			return s.failures.refuse(r, apiError(codeUnauthorized, "this route needs the admin token in an Authorization: Bearer header"))
		} else if err != nil {
			return err
		}
		return next(c)
	}
}

// cleartextListener marks a request that came in on --http-listen, the
// public port 80 beside the TLS listener.
type cleartextListener struct{}

// onCleartextListener reports whether r came in on --http-listen, where
// operator paths are never served: the admin token and backups would cross
// the network in the clear.
func onCleartextListener(r *http.Request) bool {
	return r.Context().Value(cleartextListener{}) != nil
}

func markCleartext(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), cleartextListener{}, true))
}

// Failed credential attempts are limited per client address whatever the
// general rate limit is: after Config.CredentialFailures of them in
// credentialFailureWindow, every wrong credential from that address gets
// 429 until the oldest of those failures is a window old. A right
// credential is always accepted, from a locked-out address too: the
// credentials are too long to guess ten at a time, and a stale key in a
// script must not lock its owner out of the dashboard.
const (
	credentialFailureWindow = time.Minute
	// failureWatchSize bounds the addresses with failures but no lock-out
	// that are remembered; the least recently failed is forgotten first,
	// which only gives its address back failures it had already made.
	failureWatchSize = 10000
	// failureLockedSize bounds the locked-out addresses, a table of their
	// own so that failures from other addresses cannot push them out: only
	// this many lock-outs (ten failures each, within a minute) can, and
	// the one pushed out is the least recently failed, whose lock-out has
	// usually passed.
	failureLockedSize = 1 << 15
)

// failureLimiter remembers the times of the last failed credential attempts
// of recently failing clients (clientkey.Of). A nil *failureLimiter limits
// nothing.
type failureLimiter struct {
	max      int // failures allowed in a window
	mu       sync.Mutex
	watching *simplelru.LRU[clientkey.Key, *failures] // not locked out
	locked   *simplelru.LRU[clientkey.Key, *failures] // locked out, or were
}

// failures is a ring of the last max failure times, in Unix nanoseconds.
type failures struct {
	times []int64
	n     int
	next  int // the oldest once full
}

// newFailureLimiter allows max failures per window; 0 or less: nil.
func newFailureLimiter(max int) *failureLimiter {
	if max <= 0 {
		return nil
	}
	watching, err := simplelru.NewLRU[clientkey.Key, *failures](failureWatchSize, nil)
	if err != nil {
		panic(err)
	}
	locked, err := simplelru.NewLRU[clientkey.Key, *failures](failureLockedSize, nil)
	if err != nil {
		panic(err)
	}
	return &failureLimiter{max: max, watching: watching, locked: locked}
}

// errTooManyFailures is the error of a wrong credential from an address
// that is locked out; retryAfter is in whole seconds.
type errTooManyFailures struct{ retryAfter int }

func (e *errTooManyFailures) Error() string {
	return "too many failed credential attempts from this address; retry after " + strconv.Itoa(e.retryAfter) + " s (a valid credential is still accepted)"
}

// refuse is the error of a wrong credential from r's address: an
// errTooManyFailures when the address is locked out, else wrong.
func (l *failureLimiter) refuse(r *http.Request, wrong error) error {
	if l == nil {
		return wrong
	}
	if wait := l.lockedFor(clientkey.Of(r.RemoteAddr), time.Now()); wait > 0 {
		return &errTooManyFailures{retryAfter: int(math.Ceil(wait.Seconds()))}
	}
	return wrong
}

// lockedFor is how long client k stays locked out at now; 0 when it is not.
func (l *failureLimiter) lockedFor(k clientkey.Key, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, found := l.locked.Peek(k)
	if !found {
		return 0
	}
	wait := f.lockedFor(l.max, now)
	if wait == 0 && f.times[(f.next+l.max-1)%l.max] <= now.Add(-credentialFailureWindow).UnixNano() {
		l.locked.Remove(k) // every failure it remembers is a window old
	}
	return wait
}

func (f *failures) lockedFor(limit int, now time.Time) time.Duration {
	if f.n < limit {
		return 0
	}
	until := time.Unix(0, f.times[f.next]).Add(credentialFailureWindow)
	return max(until.Sub(now), 0)
}

// fail records a failed attempt from client k at now.
func (l *failureLimiter) fail(k clientkey.Key, now time.Time) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f, locked := l.locked.Get(k) // Get: the most recently failed now
	if !locked {
		var found bool
		if f, found = l.watching.Get(k); !found {
			f = &failures{times: make([]int64, l.max)}
			l.watching.Add(k, f)
		}
	}
	f.times[f.next] = now.UnixNano()
	f.next = (f.next + 1) % l.max
	f.n = min(f.n+1, l.max)
	if !locked && f.lockedFor(l.max, now) > 0 {
		l.watching.Remove(k)
		l.locked.Add(k, f)
	}
}

// presentedCredential reports whether r carries a credential at all: only
// attempts with one count as failures.
func presentedCredential(r *http.Request) bool {
	return r.Header.Get(headerAPIKey) != "" || r.Header.Get(echo.HeaderAuthorization) != ""
}
