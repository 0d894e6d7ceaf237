package handlers

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"petstore/bounded"
	"petstore/server/clientkey"
)

// rateLimitClients bounds the clients whose buckets are remembered; a
// forgotten client (the least recently seen) starts again with a full
// burst, which only one idle while this many others were served can gain.
const rateLimitClients = 1 << 14

// maxBurst keeps the burst of an absurdly high rate within an int.
const maxBurst = 1 << 30

// rateLimitPolicy names the per-client policy in the RateLimit headers.
const rateLimitPolicy = `"per-client"`

// rateLimit allows RateLimit requests per second per client (clientkey.Of)
// with a burst of twice that, answering 429 with Retry-After past it and
// the RateLimit headers always (docs/reference.md, Limits). It runs before
// anything that costs work; only the probes pass it, so that a load
// balancer sharing an address with busy clients never sees a 429.
func (s *Server) rateLimit() echo.MiddlewareFunc {
	if s.cfg.RateLimit <= 0 {
		return func(next echo.HandlerFunc) echo.HandlerFunc { return next }
	}
	s.limiter = newRateLimiter(s.cfg.RateLimit, 2*s.cfg.RateLimit, rateLimitClients)
	window := max(int64(math.Ceil(float64(s.limiter.burst)/s.cfg.RateLimit)), 1)
	s.ratePolicy = []string{rateLimitPolicy + ";q=" + strconv.Itoa(s.limiter.burst) + ";w=" + strconv.FormatInt(window, 10)}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if isProbe(r.URL.Path) {
				return next(c)
			}
			v, _ := r.Context().Value(rateDecided{}).(rateDecision)
			if !v.decided {
				v = s.takeRate(r)
			}
			h := c.Response().Header()
			h["Ratelimit-Policy"] = s.ratePolicy // the key is canonical
			h["Ratelimit"] = []string{rateLimitPolicy + ";r=" + strconv.Itoa(v.left) + ";t=" + strconv.FormatInt(v.wait, 10)}
			if !v.ok {
				retryAfter := strconv.FormatInt(v.wait, 10)
				h.Set("Retry-After", retryAfter)
				return apiError(codeRateLimited, "too many requests from this client; retry after %s s", retryAfter)
			}
			return next(c)
		}
	}
}

// rateDecision is the rate limit's verdict on a request, taken once.
type rateDecision struct {
	decided, ok bool
	left        int
	wait        int64
}

type rateDecided struct{}

func (s *Server) takeRate(r *http.Request) rateDecision {
	ok, left, wait := s.limiter.take(clientkey.Of(r.RemoteAddr), time.Now())
	return rateDecision{decided: true, ok: ok, left: left, wait: wait}
}

// RateLimited puts the rate limit in front of h, which answers some
// requests before the server (ACME HTTP-01): a refused request gets the
// server's own 429, and one let through is not counted again.
func (s *Server) RateLimited(h http.Handler) http.Handler {
	if s.limiter == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := s.takeRate(r)
		r = r.WithContext(context.WithValue(r.Context(), rateDecided{}, v))
		if !v.ok {
			s.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// rateLimiter is a token bucket per client for at most size clients, the
// least recently seen forgotten first.
type rateLimiter struct {
	limit rate.Limit
	burst int

	mu      sync.Mutex
	clients *bounded.Cache[clientkey.Key, *rate.Limiter]
}

// newRateLimiter allows perSecond requests a second with a burst of burst
// (at least one).
func newRateLimiter(perSecond, burst float64, size int) *rateLimiter {
	return &rateLimiter{
		limit:   rate.Limit(perSecond),
		burst:   int(min(math.Floor(max(burst, 1)), maxBurst)),
		clients: bounded.New[clientkey.Key, *rate.Limiter](size, nil),
	}
}

// take takes a request from k's bucket at now: whether there was one, the
// whole requests left, and whole seconds until one more (at least 1).
func (l *rateLimiter) take(k clientkey.Key, now time.Time) (ok bool, left int, wait int64) {
	l.mu.Lock()
	lim, found := l.clients.Get(k)
	if !found {
		lim = rate.NewLimiter(l.limit, l.burst)
		l.clients.Add(k, lim)
	}
	l.mu.Unlock()
	ok = lim.AllowN(now, 1)
	tokens := max(lim.TokensAt(now), 0)
	left = int(tokens)
	if left < l.burst {
		wait = int64(math.Ceil((float64(left) + 1 - tokens) / float64(l.limit)))
	}
	return ok, left, max(wait, 0)
}

// Failed credential attempts are limited per client address whatever the
// rate limit (docs/reference.md): past Config.CredentialFailures in
// credentialFailureWindow, wrong credentials from it get 429. A right one
// is always accepted: credentials are too long to guess a few at a time,
// and a stale key in a script must not lock its owner out.
const (
	credentialFailureWindow = time.Minute
	// failureWatchSize bounds the addresses remembered with failures but no
	// lock-out; forgetting the least recently failed only gives back
	// failures it already made.
	failureWatchSize = 10000
	// failureLockedSize bounds the locked-out addresses, a table of their
	// own so that other addresses' failures cannot push them out; only as
	// many lock-outs can, pushing out the least recently failed.
	failureLockedSize = 1 << 15
)

// failureLimiter remembers the last failed credential attempts of
// recently failing clients.
type failureLimiter struct {
	max      int // failures allowed in a window
	mu       sync.Mutex
	watching *bounded.Cache[clientkey.Key, *failures] // not locked out
	locked   *bounded.Cache[clientkey.Key, *failures] // locked out, or were
}

// failures is a ring of the last max failure times, in Unix nanoseconds.
type failures struct {
	times []int64
	n     int
	next  int // the oldest once full
	// lookedUp is when a locked-out client's credential was last looked up.
	lookedUp time.Time
}

// lockedLookupInterval is how often a locked-out client's credential is
// looked up (a query on PostgreSQL): a flood of wrong keys costs a query
// per interval, and the owner's right key gets through at the next.
const lockedLookupInterval = time.Second

// mayLookUp reports whether a credential from k may be looked up now:
// always unless k is locked out, then once per lockedLookupInterval.
func (l *failureLimiter) mayLookUp(k clientkey.Key, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, found := l.locked.Peek(k)
	if !found || f.lockedFor(l.max, now) == 0 {
		return true
	}
	if now.Sub(f.lookedUp) < lockedLookupInterval {
		return false
	}
	f.lookedUp = now
	return true
}

// newFailureLimiter allows max (at least 1) failures per window.
func newFailureLimiter(max int) *failureLimiter {
	return &failureLimiter{
		max:      max,
		watching: bounded.New[clientkey.Key, *failures](failureWatchSize, nil),
		locked:   bounded.New[clientkey.Key, *failures](failureLockedSize, nil),
	}
}

// errTooManyFailures is a wrong credential from a locked-out address;
// retryAfter is in whole seconds.
type errTooManyFailures struct{ retryAfter int }

func (e *errTooManyFailures) Error() string {
	return "too many failed credential attempts from this address; retry after " + strconv.Itoa(e.retryAfter) + " s (a valid credential is still accepted)"
}

// refuse is the error of a wrong credential from r's address.
func (l *failureLimiter) refuse(r *http.Request, wrong error) error {
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

func (l *failureLimiter) fail(k clientkey.Key, now time.Time) {
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

// presentedCredential reports whether r carries a credential: only
// attempts with one count as failures.
func presentedCredential(r *http.Request) bool {
	return r.Header.Get(headerAPIKey) != "" || r.Header.Get(echo.HeaderAuthorization) != ""
}
