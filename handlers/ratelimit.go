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
// remembers (under 100 bytes each); past it, the least recently seen is
// forgotten. A forgotten client starts again with a full burst, which only
// a client that was idle while this many others were served can gain.
const rateLimitClients = 1 << 14

// rateLimit allows RateLimit requests per second per client with a burst of
// twice that, and answers 429 with Retry-After past it. A client is its
// peer address, IPv6 ones grouped by /64 (clientKeyOf).
func (s *Server) rateLimit() echo.MiddlewareFunc {
	// Whole tokens; math.Floor, since a conversion to int overflows for
	// rates near the top of float64.
	burst := math.Floor(max(2*s.cfg.RateLimit, 1))
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

// rateLimiter is a token bucket per client, for at most max clients, in a
// least-recently-used order kept as a doubly linked list of slots indexed
// by int32: no allocation per client or per request, and a fixed ceiling on
// memory whatever the number of addresses a flood comes from.
type rateLimiter struct {
	rate, burst float64
	max         int
	epoch       time.Time // slots keep their times as offsets from it

	mu     sync.Mutex
	slots  []bucketSlot
	index  map[clientKey]int32
	newest int32 // most recently used slot; -1 when empty
}

type bucketSlot struct {
	key        clientKey
	tokens     float64
	last       time.Duration // since epoch
	prev, next int32         // towards older, towards newer; circular
}

func newRateLimiter(rate, burst float64, max int) *rateLimiter {
	return &rateLimiter{rate: rate, burst: burst, max: max, epoch: time.Now(), index: make(map[clientKey]int32), newest: -1}
}

// allow takes a token from k's bucket, refilled at rate since its last
// request, and reports whether there was one.
func (l *rateLimiter) allow(k clientKey, now time.Time) bool {
	at := now.Sub(l.epoch)
	l.mu.Lock()
	defer l.mu.Unlock()
	i, ok := l.index[k]
	if !ok {
		i = l.slotFor(k)
		l.slots[i].tokens, l.slots[i].last = l.burst, at
	} else {
		l.touch(i)
	}
	b := &l.slots[i]
	if elapsed := at - b.last; elapsed > 0 {
		b.tokens = min(l.burst, b.tokens+elapsed.Seconds()*l.rate)
		b.last = at
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// slotFor returns a slot for k, new while there are fewer than max, else
// the least recently used one, forgotten; either way the newest.
func (l *rateLimiter) slotFor(k clientKey) int32 {
	var i int32
	if len(l.slots) < l.max {
		i = int32(len(l.slots))
		l.slots = append(l.slots, bucketSlot{prev: i, next: i})
		if l.newest >= 0 {
			l.link(i)
		}
	} else {
		i = l.slots[l.newest].next // the oldest
		delete(l.index, l.slots[i].key)
	}
	l.slots[i].key = k
	l.index[k] = i
	l.newest = i
	return i
}

// touch makes slot i the newest.
func (l *rateLimiter) touch(i int32) {
	if i == l.newest {
		return
	}
	s := &l.slots[i]
	l.slots[s.prev].next = s.next
	l.slots[s.next].prev = s.prev
	l.link(i)
	l.newest = i
}

// link puts slot i after the newest, between it and the oldest.
func (l *rateLimiter) link(i int32) {
	newest := l.newest
	oldest := l.slots[newest].next
	l.slots[i].prev, l.slots[i].next = newest, oldest
	l.slots[newest].next = i
	l.slots[oldest].prev = i
}
