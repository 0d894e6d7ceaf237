package handlers

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
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
		if err := s.failures.check(r); err != nil {
			return err
		}
		if !s.store.CheckAdminToken(bearerToken(r.Header.Get(echo.HeaderAuthorization))) {
			return apiError(codeUnauthorized, "this route needs the admin token in an Authorization: Bearer header")
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
// credentialFailureWindow, every credential from that address gets 429
// until the oldest of those failures is a window old.
const (
	credentialFailureWindow = time.Minute
	// failureLimiterSize bounds the clients remembered; the least
	// recently failed is forgotten first.
	failureLimiterSize = 10000
)

// failureLimiter remembers the times of the last failed credential attempts
// of recently failing clients (clientKeyOf), in least-recently-failed order.
// A nil *failureLimiter limits nothing.
type failureLimiter struct {
	max      int // failures allowed in a window
	mu       sync.Mutex
	byClient *lruMap[clientKey, failures]
}

type failures struct {
	times []time.Time // a ring of max; next is the oldest once full
	n     int
	next  int
}

// newFailureLimiter allows max failures per window; 0 or less: nil.
func newFailureLimiter(max int) *failureLimiter {
	if max <= 0 {
		return nil
	}
	return &failureLimiter{max: max, byClient: newLRUMap[clientKey, failures](failureLimiterSize)}
}

// errTooManyFailures is the error of a request whose address is locked out;
// retryAfter is in whole seconds.
type errTooManyFailures struct{ retryAfter int }

func (e *errTooManyFailures) Error() string {
	return "too many failed credential attempts from this address; retry after " + strconv.Itoa(e.retryAfter) + " s"
}

// check returns an errTooManyFailures when r's address is locked out.
func (l *failureLimiter) check(r *http.Request) error {
	if l == nil {
		return nil
	}
	if wait := l.lockedFor(clientKeyOf(r.RemoteAddr), time.Now()); wait > 0 {
		return &errTooManyFailures{retryAfter: int(math.Ceil(wait.Seconds()))}
	}
	return nil
}

// lockedFor is how long client k stays locked out at now; 0 when it is not.
func (l *failureLimiter) lockedFor(k clientKey, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, found := l.byClient.peek(k)
	if !found || f.n < l.max {
		return 0
	}
	return max(f.times[f.next].Add(credentialFailureWindow).Sub(now), 0)
}

// fail records a failed attempt from client k at now.
func (l *failureLimiter) fail(k clientKey, now time.Time) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f, found := l.byClient.use(k)
	if !found {
		f.times = make([]time.Time, l.max)
	}
	f.times[f.next] = now
	f.next = (f.next + 1) % l.max
	f.n = min(f.n+1, l.max)
}

// presentedCredential reports whether r carries a credential at all: only
// attempts with one count as failures.
func presentedCredential(r *http.Request) bool {
	return r.Header.Get(headerAPIKey) != "" || r.Header.Get(echo.HeaderAuthorization) != ""
}
