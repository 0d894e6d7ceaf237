package domaintest

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer safe for concurrent writers: a logger, a
// child process's output, a service run in a goroutine.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// Reset empties the buffer.
func (s *SyncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Reset()
}

// Tail is the end of what was written, so that a failure message stays
// readable when a server logged a lot.
func (s *SyncBuffer) Tail() string {
	const max = 4000
	out := s.String()
	if len(out) > max {
		out = "...\n" + out[len(out)-max:]
	}
	return out
}
