package accesslog

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// summaryAddresses bounds the distinct addresses a summary counts in one
// window; past it, the summary says "at least".
const summaryAddresses = 10000

// Summary turns a flood of refused requests (unknown hosts, rate-limited
// clients, refused TLS handshakes) into at most one line per window: "N
// requests for unknown hosts from M addresses in the last minute". A line
// per refusal would let any client fill the disk with the service's log at
// the cost of the refusals. It starts no goroutine: a window's line is
// written by a timer set at its first refusal.
type Summary struct {
	log    *slog.Logger
	what   string // "requests for unknown hosts"
	window time.Duration

	mu    sync.Mutex
	n     int
	addrs map[string]struct{}
	more  bool
}

// NewSummary returns a summary of what (a plural noun phrase) written to
// log once per window in which any happened.
func NewSummary(log *slog.Logger, what string, window time.Duration) *Summary {
	return &Summary{log: log, what: what, window: window}
}

// Add counts one refusal from addr (a client address).
func (s *Summary) Add(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 {
		s.addrs = map[string]struct{}{}
		time.AfterFunc(s.window, s.flush)
	}
	s.n++
	if _, ok := s.addrs[addr]; !ok {
		if len(s.addrs) < summaryAddresses {
			s.addrs[addr] = struct{}{}
		} else {
			s.more = true
		}
	}
}

func (s *Summary) flush() {
	s.mu.Lock()
	n, m, more := s.n, len(s.addrs), s.more
	s.n, s.addrs, s.more = 0, nil, false
	s.mu.Unlock()
	from := "from"
	if more {
		from = "from at least"
	}
	last := "the last " + s.window.String()
	if s.window == time.Minute {
		last = "the last minute"
	}
	s.log.LogAttrs(context.Background(), slog.LevelWarn,
		strconv.Itoa(n)+" "+s.what+" "+from+" "+strconv.Itoa(m)+" addresses in "+last,
		slog.Int("count", n), slog.Int("addresses", m))
}
