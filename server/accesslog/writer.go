package accesslog

import (
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of Writer's buffer. Past logBufferMax bytes lines are dropped: a
// sink that does not keep up must cost log lines, never requests. Past
// logKickAt the flusher is woken early, so that a busy service writes in
// large pieces without holding much.
const (
	logBufferMax = 1 << 20
	logKickAt    = 64 << 10
)

// logDropReportInterval is how often, at most, drops are reported.
const logDropReportInterval = 10 * time.Second

// Writer is the service's log output. Write only appends to a bounded
// buffer, never waiting for the sink; a goroutine writes it out an
// interval after its first line, since a write per line would cost more
// than the request. Each Write is kept or dropped whole. Safe for
// concurrent use.
type Writer struct {
	sink     io.Writer
	interval time.Duration

	mu      sync.Mutex
	pending []byte
	dropped atomic.Uint64

	// onDrop is set by OnDrop before the first Write, read by the flusher.
	onDrop func(n uint64)

	// wake: a line came into an empty buffer; kick: write out at once.
	wake, kick chan struct{}
	stop       chan struct{}
	done       chan struct{}
}

// NewWriter starts a Writer writing to sink an interval after a line comes
// into its empty buffer.
func NewWriter(sink io.Writer, interval time.Duration) *Writer {
	l := &Writer{
		sink: sink, interval: interval,
		wake: make(chan struct{}, 1), kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go l.flusher()
	return l
}

// OnDrop sets report, called from the flusher at most every
// logDropReportInterval with the lines dropped since its last call
// (typically logged through the same buffer). Call it before logging.
func (l *Writer) OnDrop(report func(n uint64)) { l.onDrop = report }

// Dropped is the number of lines dropped since the start.
func (l *Writer) Dropped() uint64 { return l.dropped.Load() }

// Write keeps p for the next flush, or drops it when the buffer is full;
// it never fails, since a lost log line is not the caller's error.
func (l *Writer) Write(p []byte) (int, error) {
	l.mu.Lock()
	if len(l.pending)+len(p) > logBufferMax {
		l.mu.Unlock()
		l.dropped.Add(1)
		return len(p), nil
	}
	first := len(l.pending) == 0
	l.pending = append(l.pending, p...)
	full := len(l.pending) >= logKickAt
	l.mu.Unlock()
	if first {
		signal(l.wake)
	}
	if full {
		signal(l.kick)
	}
	return len(p), nil
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Close writes out what is buffered, waiting at most wait for a sink that
// does not take it: shutdown must not hang on a log reader.
func (l *Writer) Close(wait time.Duration) {
	close(l.stop)
	select {
	case <-l.done:
	case <-time.After(wait):
	}
}

func (l *Writer) flusher() {
	defer close(l.done)
	// t is armed while buffered lines or unreported drops wait for it.
	t := time.NewTimer(l.interval)
	defer t.Stop()
	armed := true
	var spare []byte
	var reported uint64
	var lastReport time.Time // the first drop is reported at once
	for {
		select {
		case <-l.wake:
			if !armed {
				t.Reset(l.interval)
				armed = true
			}
			continue
		case <-t.C:
			armed = false
		case <-l.kick:
		case <-l.stop:
			l.writeOut(spare)
			return
		}
		spare = l.writeOut(spare)
		d := l.dropped.Load()
		if d <= reported || l.onDrop == nil {
			continue
		}
		if wait := logDropReportInterval - time.Since(lastReport); wait <= 0 {
			l.onDrop(d - reported)
			reported, lastReport = d, time.Now()
		} else if !armed {
			t.Reset(wait)
			armed = true
		}
	}
}

// writeOut swaps the pending buffer for spare and writes it outside the
// lock, so that Write goes on while the sink is slow; it returns the
// written buffer, emptied, as the next spare.
func (l *Writer) writeOut(spare []byte) []byte {
	l.mu.Lock()
	out := l.pending
	l.pending = spare[:0]
	l.mu.Unlock()
	if len(out) > 0 {
		_, _ = l.sink.Write(out)
	}
	return out[:0]
}
