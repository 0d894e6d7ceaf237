package accesslog

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// summaryAddresses bounds the addresses counted per window; past it, the
// line says "at least".
const summaryAddresses = 10000

// Summary turns a flood of refusals into at most one line per window ("N
// requests for unknown hosts from M addresses in the last minute"), since a
// line each would let any client fill the disk. It starts no goroutine: a
// timer set at a window's first refusal writes its line.
type Summary struct {
	log    *slog.Logger
	what   string // "requests for unknown hosts"
	window time.Duration

	mu    sync.Mutex
	n     int
	addrs map[string]struct{}
	more  bool
}

// NewSummary returns a summary of what (a plural noun phrase) logged once
// per window with any.
func NewSummary(log *slog.Logger, what string, window time.Duration) *Summary {
	return &Summary{log: log, what: what, window: window}
}

// Add counts one refusal from addr (a client address), and says whether it
// is its window's first, which a caller may log in full.
func (s *Summary) Add(addr string) (first bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if first = s.n == 0; first {
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
	return first
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
