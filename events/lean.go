package events

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"petstore/store"
)

// A leanClient sends a plain http:// webhook's attempts on connections of
// its own, with net/http's writer (Request.Write) and parser
// (ReadResponse), one request at a time per connection, in the attempt's
// goroutine. A Transport hands each request to a connection's write loop
// and its answer back from the read loop: two goroutine hand-overs per
// attempt, which were most of what a delivery cost the service
// (docs/performance.md, "The webhook row"). It keeps every rule of the
// Transport's use above: the dialer's policy, at most the webhook's slots
// of connections, the answer's header limit, at most ResponseLimit of its
// body read, the attempt's deadline, an answer taken only if it came after
// its request, and a request that meets a receiver closing its idle
// connection sent again at once on a new one. https:// receivers keep the
// Transport, which speaks HTTP/2 where they offer it.
type leanClient struct {
	e    *Engine
	u    *url.URL
	addr string // host:port
	// slots bounds the connections open, idle or not.
	slots chan struct{}

	mu   sync.Mutex
	idle []*leanConn // the most recently used last
	// sweeping: a sweep is due; closed: closeIdle was called (the sender
	// was dropped, or the engine stopped).
	sweeping, closed bool
}

// leanConn is a connection and its buffers.
type leanConn struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
	// lim is what the bufio.Reader may still read of the conn.
	lim       limitReader
	idleSince time.Time
}

// limitReader reads a connection while n, what is left of the answer's
// header limit, is positive.
type limitReader struct {
	c net.Conn
	n int64
}

// errHeadersTooLong ends an answer whose status line and headers go past
// maxHeaderBytes.
var errHeadersTooLong = fmt.Errorf("the receiver's answer headers exceeded %d bytes: the connection was closed there", maxHeaderBytes)

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errHeadersTooLong
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.c.Read(p)
	l.n -= int64(n)
	return n, err
}

func newLeanClient(e *Engine, u *url.URL) *leanClient {
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return &leanClient{e: e, u: u, addr: net.JoinHostPort(u.Hostname(), port),
		slots: make(chan struct{}, store.MaxInFlightPerWebhook)}
}

// longAgo, as a deadline, ends a connection's pending reads and writes.
var longAgo = time.Unix(1, 0)

// attempt sends req, whose body is body, and judges its answer. It ends
// at deadline (its connection's deadline, rather than a context's, which
// would cost a timer per attempt), or at once when ctx ends.
func (l *leanClient) attempt(ctx context.Context, req *http.Request, body []byte, deadline, began time.Time, o *store.Outcome) {
	// The engine starts no more attempts of a webhook than it has slots:
	// this waits only for connections still being closed.
	select {
	case l.slots <- struct{}{}:
	default:
		wait, cancel := context.WithDeadline(ctx, deadline)
		select {
		case l.slots <- struct{}{}:
			cancel()
		case <-wait.Done():
			cancel()
			o.Duration = time.Since(began)
			o.Error = l.e.describe(wait.Err())
			return
		}
	}
	defer func() { <-l.slots }()
	lc, reused := l.get()
	for {
		if lc == nil {
			var err error
			if lc, err = l.dial(ctx, deadline); err != nil {
				o.Duration = time.Since(began)
				o.Error = l.e.describe(err)
				return
			}
		}
		retry, keep := l.roundTrip(ctx, lc, req, body, deadline, began, o, reused)
		if keep {
			l.put(lc)
		} else {
			lc.c.Close()
		}
		if !retry {
			return
		}
		// The receiver closed a kept-alive connection as the request
		// arrived, before any answer: the request goes again, once, on a
		// new connection.
		lc, reused = nil, false
	}
}

// roundTrip makes one request on lc. retry: lc was a kept-alive
// connection that ended before any answer; keep: lc may take another
// request.
func (l *leanClient) roundTrip(ctx context.Context, lc *leanConn, req *http.Request, body []byte, deadline, began time.Time, o *store.Outcome, reused bool) (retry, keep bool) {
	lc.c.SetDeadline(deadline)
	// Shutting down ends the attempt at once, as it would a Transport's.
	stop := context.AfterFunc(ctx, func() { lc.c.SetDeadline(longAgo) })
	defer stop()
	fail := func(err error) (bool, bool) {
		o.Duration = time.Since(began)
		o.Error = l.e.describe(err)
		return false, false
	}
	// Bytes that came before the request cannot answer it (get looks at
	// a kept-alive connection the same way).
	if !reused && !quiet(lc.c) {
		return fail(errors.New("the receiver sent bytes, or closed the connection, before the request was sent"))
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	err := req.Write(lc.bw)
	if err == nil {
		err = lc.bw.Flush()
	}
	if err != nil {
		if retryable(ctx, err, reused) {
			return true, false
		}
		return fail(err)
	}
	lc.lim.n = maxHeaderBytes
	resp, err := http.ReadResponse(lc.br, req)
	// Informational answers come before the answer.
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
		resp, err = http.ReadResponse(lc.br, req)
	}
	if err != nil {
		if lc.lim.n <= 0 {
			err = errHeadersTooLong
		}
		if lc.lim.n == maxHeaderBytes && retryable(ctx, err, reused) {
			return true, false
		}
		return fail(err)
	}
	lc.lim.n = math.MaxInt64
	// What the log keeps, and one byte more to tell whether the answer
	// ended there; the rest of a longer one is not read (resp.Body.Close
	// would read it all): its connection is closed.
	var kept []byte
	var rerr error
	done := true
	if resp.Body != http.NoBody {
		kept, rerr = io.ReadAll(io.LimitReader(resp.Body, ResponseLimit+1))
		done = rerr == nil && len(kept) <= ResponseLimit
		kept = kept[:min(len(kept), ResponseLimit)]
	}
	o.Duration = time.Since(began)
	if rerr != nil {
		rerr = errors.New(l.e.describe(rerr))
	}
	outcome(o, resp.StatusCode, kept, rerr)
	// Bytes after the answer are no answer to the next request.
	return false, done && !resp.Close && resp.StatusCode != http.StatusSwitchingProtocols && lc.br.Buffered() == 0
}

// retryable reports whether a request that failed with err before any
// answer goes again on a new connection: on a kept-alive one that the
// receiver closed (not when the attempt's time is up, nor when shutting
// down).
func retryable(ctx context.Context, err error, reused bool) bool {
	var ne net.Error
	return reused && ctx.Err() == nil && !(errors.As(err, &ne) && ne.Timeout()) && err != errHeadersTooLong
}

func (l *leanClient) dial(ctx context.Context, deadline time.Time) (*leanConn, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	c, err := l.e.dialer.DialContext(ctx, "tcp", l.addr)
	if err != nil {
		return nil, err
	}
	lc := &leanConn{c: c, lim: limitReader{c: c}, bw: bufio.NewWriterSize(c, 4<<10)}
	lc.br = bufio.NewReaderSize(&lc.lim, 4<<10)
	return lc, nil
}

// get takes the most recently used idle connection that has nothing to
// read: one that has bytes, an extra answer to an earlier request, or
// that the receiver closed, is closed instead, as a Transport does when
// it notices.
func (l *leanClient) get() (*leanConn, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropExpired(time.Now())
	for n := len(l.idle); n > 0; n-- {
		lc := l.idle[n-1]
		l.idle[n-1] = nil
		l.idle = l.idle[:n-1]
		if quiet(lc.c) {
			return lc, true
		}
		lc.c.Close()
	}
	return nil, false
}

// put keeps lc for the next request.
func (l *leanClient) put(lc *leanConn) {
	lc.c.SetDeadline(time.Time{})
	lc.idleSince = time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		lc.c.Close()
		return
	}
	l.idle = append(l.idle, lc)
	if !l.sweeping {
		l.sweeping = true
		time.AfterFunc(idleTimeout, l.sweep)
	}
}

// sweep closes the connections idle for idleTimeout, as a Transport does,
// and looks again later while some are idle.
func (l *leanClient) sweep() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropExpired(time.Now())
	if l.sweeping = len(l.idle) > 0; l.sweeping {
		time.AfterFunc(idleTimeout, l.sweep)
	}
}

// dropExpired closes the connections idle for idleTimeout at now, the
// oldest first; l.mu is held.
func (l *leanClient) dropExpired(now time.Time) {
	n := 0
	for n < len(l.idle) && now.Sub(l.idle[n].idleSince) >= idleTimeout {
		l.idle[n].c.Close()
		n++
	}
	if n > 0 {
		l.idle = append(l.idle[:0], l.idle[n:]...)
	}
}

// closeIdle closes the idle connections; those under way are closed when
// their attempts end.
func (l *leanClient) closeIdle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, lc := range l.idle {
		lc.c.Close()
	}
	l.idle = nil
	l.closed = true
}
