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
	"golang.org/x/time/rate"

	"petstore/handlers/clientkey"
)

// rateLimitClients bounds the clients whose buckets the rate limiter
// remembers; past it, the least recently seen is forgotten. A forgotten
// client starts again with a full burst, which only a client that was idle
// while this many others were served can gain.
const rateLimitClients = 1 << 14

// maxBurst keeps the burst of an absurdly high rate within an int.
const maxBurst = 1 << 30

// rateLimitPolicy names the per-client policy in the RateLimit and
// RateLimit-Policy fields (draft-ietf-httpapi-ratelimit-headers).
const rateLimitPolicy = `"per-client"`

// rateLimit allows RateLimit requests per second per client with a burst of
// twice that, and answers 429 with Retry-After past it. A client is its
// peer address, IPv6 ones grouped by /64 (clientkey.Of). It runs before
// anything that costs work (the host routing, the ACME challenges: see
// RateLimited); only the probes pass it, so that a load balancer sharing an
// address with busy clients never sees a 429.
//
// Every answer it lets through or refuses carries the IETF httpapi draft's
// RateLimit-Policy (the burst, q, and the seconds an empty bucket takes to
// fill again, w: a client that keeps to q/w requests a second is never
// refused) and RateLimit (r: the requests the client may send now; t: the
// seconds until that number grows, which on a 429 is its Retry-After).
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
			if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
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

// RateLimited puts the rate limit in front of h, a handler that answers some
// requests before the server does (the ACME HTTP-01 challenges): a refused
// request gets the server's own 429 (logged and counted as every other),
// and one let through is not counted again when h hands it to the server.
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

// rateLimiter is a token bucket (x/time/rate) per client, for at most size
// clients, the least recently seen forgotten first (golang-lru's LRU).
type rateLimiter struct {
	limit rate.Limit
	burst int

	mu      sync.Mutex
	clients *simplelru.LRU[clientkey.Key, *rate.Limiter]
}

// newRateLimiter allows perSecond requests a second with a burst of burst
// (at least one whole request).
func newRateLimiter(perSecond, burst float64, size int) *rateLimiter {
	clients, err := simplelru.NewLRU[clientkey.Key, *rate.Limiter](size, nil)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &rateLimiter{
		limit:   rate.Limit(perSecond),
		burst:   int(min(math.Floor(max(burst, 1)), maxBurst)),
		clients: clients,
	}
}

// take takes a request from k's bucket at now, and reports whether there
// was one, how many whole requests are left, and the whole seconds until
// one more is (at least 1 when none is left).
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

// allow is take's verdict alone.
func (l *rateLimiter) allow(k clientkey.Key, now time.Time) bool {
	ok, _, _ := l.take(k, now)
	return ok
}
