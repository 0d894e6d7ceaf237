package handlers

import (
	"fmt"
	"math"
	"net/netip"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// rateLimitClients bounds the clients whose buckets the rate limiter
// remembers (under 200 bytes each); past it, the least recently seen is
// forgotten. A forgotten client starts again with a full burst, which only
// a client that was idle while this many others were served can gain.
const rateLimitClients = 1 << 14

// rateLimit allows RateLimit requests per second per client with a burst of
// twice that, and answers 429 with Retry-After past it. A client is its
// peer address, IPv6 ones grouped by /64 (clientKeyOf).
func (s *Server) rateLimit() echo.MiddlewareFunc {
	burst := math.Floor(max(2*s.cfg.RateLimit, 1)) // whole tokens
	retryAfter := "1"
	if s.cfg.RateLimit < 1 {
		retryAfter = fmt.Sprint(int(1/s.cfg.RateLimit + 0.999))
	}
	limiter := newRateLimiter(s.cfg.RateLimit, burst, rateLimitClients)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !limiter.allow(clientKeyOf(c.Request().RemoteAddr), time.Now()) {
				c.Response().Header().Set("Retry-After", retryAfter)
				return apiError(codeRateLimited, "too many requests from this client; retry after %s s", retryAfter)
			}
			return next(c)
		}
	}
}

// clientKey identifies a client for the limits: an IPv4 address, or the
// /64 network of an IPv6 address. One IPv6 host usually has a whole /64 to
// pick source addresses from, so counting addresses would give it 2^64
// limits.
type clientKey [16]byte

// clientKeyOf is the client of a request's RemoteAddr ("ip:port"); what
// does not parse (no peer address: tests, in-process callers) is the zero
// key, one shared client.
func clientKeyOf(remoteAddr string) clientKey {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return clientKey{}
	}
	a := ap.Addr().Unmap()
	k := clientKey(a.As16())
	if a.Is6() {
		clear(k[8:])
	}
	return k
}

// rateLimiter is a token bucket per client, for at most max clients.
type rateLimiter struct {
	rate, burst float64

	mu      sync.Mutex
	buckets *lruMap[clientKey, bucket]
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newRateLimiter(rate, burst float64, max int) *rateLimiter {
	return &rateLimiter{rate: rate, burst: burst, buckets: newLRUMap[clientKey, bucket](max)}
}

// allow takes a token from k's bucket, refilled at rate since its last
// request, and reports whether there was one.
func (l *rateLimiter) allow(k clientKey, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, found := l.buckets.use(k)
	if !found {
		b.tokens, b.last = l.burst, now
	}
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = min(l.burst, b.tokens+elapsed.Seconds()*l.rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
