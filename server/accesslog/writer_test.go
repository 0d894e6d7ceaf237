package accesslog

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// gateSink blocks every Write until open is closed, then keeps what it gets.
type gateSink struct {
	open chan struct{}
	mu   sync.Mutex
	buf  bytes.Buffer
}

func (s *gateSink) Write(p []byte) (int, error) {
	<-s.open
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

// TestWriterDropsAndReports: while the sink takes nothing, writes return
// at once and what does not fit is dropped and counted; once the sink takes
// again, the drop is reported and later lines arrive whole.
func TestWriterDropsAndReports(t *testing.T) {
	sink := &gateSink{open: make(chan struct{})}
	l := NewWriter(sink, time.Millisecond)
	reports := make(chan uint64, 10)
	l.OnDrop(func(n uint64) { reports <- n })
	line := []byte(strings.Repeat("x", 1023) + "\n")
	const lines = 3 * logBufferMax / 1024
	start := time.Now()
	for range lines {
		if _, err := l.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("writes took %s with a sink that takes nothing", d)
	}
	dropped := l.Dropped()
	if dropped == 0 || dropped >= lines {
		t.Fatalf("dropped %d of %d lines; want some, not all", dropped, lines)
	}
	close(sink.open)
	select {
	case n := <-reports:
		if n != dropped {
			t.Errorf("reported %d dropped lines; want %d", n, dropped)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the drop was never reported")
	}
	// The buffer may still be full until the next flush: write until a
	// line is kept.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		before := l.Dropped()
		_, _ = l.Write([]byte("last line\n"))
		if l.Dropped() == before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("lines are still dropped long after the sink took again")
		}
	}
	l.Close(10 * time.Second)
	sink.mu.Lock()
	defer sink.mu.Unlock()
	out := sink.buf.String()
	if !strings.HasSuffix(out, "last line\n") {
		t.Errorf("the last line did not arrive; output ends %q", out[max(0, len(out)-40):])
	}
	if len(strings.TrimSuffix(out, "last line\n"))%1024 != 0 {
		t.Error("a line arrived cut")
	}
}

// TestWriterCloseDoesNotWaitForAStuckSink: Close gives up on a sink that
// never takes what it is given.
func TestWriterCloseDoesNotWaitForAStuckSink(t *testing.T) {
	sink := &gateSink{open: make(chan struct{})}
	defer close(sink.open)
	l := NewWriter(sink, time.Millisecond)
	_, _ = l.Write([]byte("a line\n"))
	done := make(chan struct{})
	go func() { l.Close(100 * time.Millisecond); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for a stuck sink")
	}
}

// chanSink passes each write on.
type chanSink chan string

func (s chanSink) Write(p []byte) (int, error) { s <- string(p); return len(p), nil }

// TestWriterWritesLinesAfterIdling: the flusher sleeps while nothing is
// buffered; a line that comes after a flush, into an empty buffer, still
// goes out an interval later, without a Close or a full buffer.
func TestWriterWritesLinesAfterIdling(t *testing.T) {
	sink := make(chanSink, 10)
	l := NewWriter(sink, time.Millisecond)
	defer l.Close(10 * time.Second)
	for _, line := range []string{"first\n", "second\n", "third\n"} {
		_, _ = l.Write([]byte(line))
		select {
		case got := <-sink:
			if got != line {
				t.Fatalf("wrote %q; want %q", got, line)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q was never written", line)
		}
	}
}
