package handlers

import (
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"petstore/server/clientkey"
)

// responseWriteTimeout bounds writing one capped answer, all of which are
// small: a client that stops reading gives its slot back after this, not
// after the server's write timeout. Set only on an answer that could wait
// for its client (cappedWriter).
const responseWriteTimeout = 10 * time.Second

// inFlight caps the requests served at once, in total and per client
// (clientkey). It comes after readBody, so a slow body costs its sender a
// connection, never a slot, and is left off the probes and the operator's
// paths, so that no client can keep the operator or a load balancer out.
type inFlight struct {
	max, perClient int
	// writeTimeout is responseWriteTimeout; tests shorten it.
	writeTimeout time.Duration

	mu     sync.Mutex
	total  int
	counts map[clientkey.Key]int
}

func newInFlight(max, perClient int) *inFlight {
	return &inFlight{max: max, perClient: perClient, writeTimeout: responseWriteTimeout, counts: map[clientkey.Key]int{}}
}

// take takes a slot for k, or says which limit is reached ("" when taken).
func (f *inFlight) take(k clientkey.Key) (limit string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.counts[k] // one lookup and one store: this runs on every request
	switch {
	case f.total >= f.max:
		return "the server is at its limit of requests in flight"
	case f.perClient > 0 && n >= f.perClient:
		return "this client is at its limit of requests in flight"
	}
	f.total++
	f.counts[k] = n + 1
	return ""
}

func (f *inFlight) release(k clientkey.Key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.total--
	if n := f.counts[k] - 1; n > 0 {
		f.counts[k] = n
	} else {
		delete(f.counts, k)
	}
}

// limit answers 503 with Retry-After past either cap: more concurrency
// only adds latency and memory, and a retry later is served better.
func (f *inFlight) limit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if isStream(c.Request()) {
			return next(c) // held for as long as the client stays: the stream cap counts it
		}
		k := clientkey.Of(c.Request().RemoteAddr)
		if limit := f.take(k); limit != "" {
			c.Response().Header().Set("Retry-After", "1")
			return apiError(codeUnavailable, "%s; retry after the seconds in Retry-After", limit)
		}
		defer f.release(k)
		res := c.Response()
		w := cappedWriters.Get().(*cappedWriter)
		*w = cappedWriter{ResponseWriter: res.Writer, timeout: f.writeTimeout}
		res.Writer = w
		err := next(c)
		// The error handler writes after this returns; the writer goes back to
		// the pool.
		res.Writer = w.ResponseWriter
		*w = cappedWriter{}
		cappedWriters.Put(w)
		return err
	}
}

// quietBytes is what net/http buffers before anything reaches the
// connection: a handler writing no more, unflushed, never waits.
const quietBytes = 2 << 10

// cappedWriter sets a capped answer's write deadline only when it could
// wait for its client: before a write past quietBytes, or a flush. Most
// answers are written out after the handler returned its slot, and a
// deadline per request (a timer change each time) would buy them nothing.
type cappedWriter struct {
	http.ResponseWriter
	timeout time.Duration
	written int
	set     bool
}

var cappedWriters = sync.Pool{New: func() any { return new(cappedWriter) }}

func (w *cappedWriter) Write(p []byte) (int, error) {
	if w.written += len(p); w.written > quietBytes {
		w.setDeadline()
	}
	return w.ResponseWriter.Write(p)
}

func (w *cappedWriter) setDeadline() {
	if !w.set {
		w.set = true
		setWriteDeadline(w.ResponseWriter, time.Now().Add(w.timeout))
	}
}

// FlushError sends what is buffered to the client: it may wait.
func (w *cappedWriter) FlushError() error {
	w.setDeadline()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Flush is FlushError for an http.Flusher.
func (w *cappedWriter) Flush() { _ = w.FlushError() }

// SetWriteDeadline is a handler's own deadline (a stream's): a later flush
// or write does not replace it with the cap's.
func (w *cappedWriter) SetWriteDeadline(t time.Time) error {
	w.set = true
	return http.NewResponseController(w.ResponseWriter).SetWriteDeadline(t)
}

// Unwrap lets http.ResponseController reach net/http's writer.
func (w *cappedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// setWriteDeadline is http.ResponseController's SetWriteDeadline without
// the controller, which escapes to the heap on every request. Where no
// writer takes it (tests' recorders), the server's write timeout stands.
func setWriteDeadline(w http.ResponseWriter, t time.Time) {
	for {
		switch u := w.(type) {
		case interface{ SetWriteDeadline(time.Time) error }:
			_ = u.SetWriteDeadline(t)
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = u.Unwrap()
		default:
			return
		}
	}
}
