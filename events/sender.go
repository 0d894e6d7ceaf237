package events

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync/atomic"
	"time"

	"petstore/store"
)

// A sender sends one webhook URL's attempts with a Transport of its own,
// so that one receiver's connections, and the wait for them, are never
// another's. An attempt has a connection to itself (HTTP/1.1) or a stream
// (HTTP/2): an answer always belongs to its request.
type sender struct {
	e   *Engine
	url string
	tr  *http.Transport
}

// Limits of a sender's connections.
const (
	// idleTimeout drops our idle connections before receivers drop theirs
	// (Node's after 5 s): a receiver closing one as a request goes out fails
	// the request, and the Transport retries that only once.
	idleTimeout = 4 * time.Second
	// maxHeaderBytes bounds how much of an answer's head is read into memory.
	maxHeaderBytes = 64 << 10
)

// job is an attempt to make, and its signer.
type job struct {
	d      *store.Claimed
	signer *signer
}

// senderKey names a sender: a webhook's URL may change.
type senderKey struct {
	webhook int64
	url     string
}

// newSender checks the URL; the dialer checks the address.
func (e *Engine) newSender(raw string) (*sender, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("the URL cannot be requested: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("the URL cannot be requested: scheme %q is not http or https", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, errors.New("the URL cannot be requested: it has no host")
	}
	tr := &http.Transport{
		// No proxy: the dialer judges the receiver's own address.
		Proxy:           nil,
		DialContext:     e.dial,
		TLSClientConfig: &tls.Config{RootCAs: e.cfg.RootCAs},
		// With its own dialer, a Transport offers HTTP/2 only when asked.
		ForceAttemptHTTP2: true,
		// Each of a webhook's attempts here finds a connection without
		// waiting, and no more than that are ever open.
		MaxConnsPerHost:     store.MaxInFlightPerWebhook,
		MaxIdleConns:        store.MaxInFlightPerWebhook,
		MaxIdleConnsPerHost: store.MaxInFlightPerWebhook,
		IdleConnTimeout:     idleTimeout,
		// The attempt's context bounds the rest; these bound what it leaves open.
		TLSHandshakeTimeout:    e.timeout,
		MaxResponseHeaderBytes: maxHeaderBytes,
		// The log keeps the answer as the receiver sent it.
		DisableCompression: true,
	}
	return &sender{e: e, url: raw, tr: tr}, nil
}

// sendIn makes one of a claim's attempts in its own goroutine and hands
// its outcome to the engine.
func (s *sender) sendIn(ctx context.Context, j job, c *claimContext) {
	s.e.wg.Add(1)
	go func() {
		defer s.e.wg.Done()
		o := s.attempt(c, j)
		c.done()
		if ctx.Err() != nil {
			return // shutting down: the lease runs out and the attempt is made again
		}
		s.e.finish(ctx, j.d, o)
	}()
}

// claimContext is the shared deadline of a claim's attempts: one timer
// and one child of the engine's context for all, since each child
// registered and removed takes the engine context's lock.
type claimContext struct {
	context.Context
	cancel context.CancelFunc
	left   atomic.Int32 // attempts not yet ended
}

func newClaimContext(ctx context.Context, deadline time.Time, attempts int) *claimContext {
	c := &claimContext{}
	c.Context, c.cancel = context.WithDeadline(ctx, deadline)
	c.left.Store(int32(attempts))
	return c
}

// done ends one attempt; the last releases the context.
func (c *claimContext) done() {
	if c.left.Add(-1) == 0 {
		c.cancel()
	}
}

// Values of every attempt's headers.
var (
	contentTypeJSON = []string{"application/json"}
	userAgent       = []string{"petstore-webhooks"}
)

func (s *sender) attempt(ctx context.Context, j job) (o store.Outcome) {
	e := s.e
	o.AttemptedAt = e.cfg.Now()
	began := time.Now()
	body := j.d.Event.AppendJSON(make([]byte, 0, 128+len(j.d.Event.Data)))
	w := new(watch)
	ctx = httptrace.WithClientTrace(ctx, w.trace())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		o.Error = "the URL cannot be requested: " + err.Error()
		return o
	}
	req.Header = make(http.Header, 6)
	// Shared between attempts: nothing writes them.
	req.Header["Content-Type"] = contentTypeJSON
	req.Header["User-Agent"] = userAgent
	// An event is safe to send twice (receivers deduplicate on webhook-id).
	// A key with no value, not sent, lets the Transport retry on a new
	// connection when a kept-alive one closes before any answer.
	req.Header["Idempotency-Key"] = nil
	j.signer.sign(req.Header, j.d.Event.ID.String(), o.AttemptedAt, body)
	resp, err := s.tr.RoundTrip(req)
	if err != nil {
		o.Duration = time.Since(began)
		o.Error = e.describe(err)
		return o
	}
	defer resp.Body.Close()
	if resp.ProtoMajor == 1 && w.stale.Load() {
		// Bytes read before this request went out are an earlier request's extra
		// answer, not this one's; the connection goes with it.
		w.conn.Load().Close()
		o.Duration = time.Since(began)
		o.Error = "the receiver sent an answer before this request was sent (an extra answer to an earlier one): the connection was closed, and the answer not taken"
		return o
	}
	// Reading only what the log keeps: closing a longer body early closes the
	// connection rather than reading the rest.
	var kept []byte
	var rerr error
	if resp.ContentLength != 0 {
		kept, rerr = io.ReadAll(&io.LimitedReader{R: resp.Body, N: ResponseLimit})
	}
	o.Duration = time.Since(began)
	outcome(&o, resp.StatusCode, kept)
	if rerr != nil && o.Succeeded {
		o.Error = "reading the answer: " + e.describe(rerr)
		// A body that the attempt's time cuts stays a success, its status in
		// time; one the receiver broke off (as a crash after its status line
		// does) may not have taken the event.
		o.Succeeded = ctx.Err() != nil
	}
	return o
}

// dial connects to a receiver, refusing what the policy refuses at the
// address it is about to use; the connection counts its reads.
func (e *Engine) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := e.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c}, nil
}

// watchedConn counts reads that brought bytes and notes the count when a
// request starts going out.
type watchedConn struct {
	net.Conn
	reads atomic.Uint64
	// armed: a request has the connection and has not written yet;
	// readsAtWrite: the reads before its first write.
	armed        atomic.Bool
	readsAtWrite atomic.Uint64
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.reads.Add(1)
	}
	return n, err
}

func (c *watchedConn) Write(p []byte) (int, error) {
	// Before the write: an answer may be read before Write returns.
	if c.armed.CompareAndSwap(true, false) {
		c.readsAtWrite.Store(c.reads.Load())
	}
	return c.Conn.Write(p)
}

// watch is an attempt's view of its connection. HTTP/1.1 answers have no
// request ids: a receiver that answers twice leaves its second answer on
// a pooled connection, which the next request would read as its own. So
// an answer needs bytes read after its request started going out, judged
// at its first byte, while the connection is still this request's.
type watch struct {
	conn  atomic.Pointer[watchedConn]
	stale atomic.Bool
	tr    httptrace.ClientTrace
}

func (w *watch) trace() *httptrace.ClientTrace {
	w.tr = httptrace.ClientTrace{GotConn: w.gotConn, GotFirstResponseByte: w.gotFirstByte}
	return &w.tr
}

func (w *watch) gotConn(info httptrace.GotConnInfo) {
	c := info.Conn
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	wc, _ := c.(*watchedConn)
	w.conn.Store(wc)
	if wc != nil {
		wc.readsAtWrite.Store(wc.reads.Load())
		wc.armed.Store(true)
	}
}

// gotFirstByte notes whether the answer was read before the request went
// out.
func (w *watch) gotFirstByte() {
	c := w.conn.Load()
	w.stale.Store(c != nil && (c.armed.Load() || c.reads.Load() == c.readsAtWrite.Load()))
}

func (s *sender) closeIdle() { s.tr.CloseIdleConnections() }
