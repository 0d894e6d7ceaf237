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

// A sender sends one webhook URL's attempts with a net/http Transport of
// its own, so that one receiver's connections, and the wait for them,
// are never another's. Each attempt is one request on a connection of its
// own at a time (HTTP/1.1, kept alive), or a stream of a shared one where
// the receiver offers HTTP/2: an answer always belongs to its request.
type sender struct {
	e   *Engine
	url string
	tr  *http.Transport
}

// Limits of a sender's connections.
const (
	// idleTimeout drops a connection left unused that long. Receivers
	// close idle connections too, Node's after 5 s by default: one that
	// does so as a request goes out makes the request fail with no answer
	// (the Transport then sends it again on a new connection, but only
	// once). Dropping ours first leaves that race to the rare receiver
	// with a shorter timeout still.
	idleTimeout = 4 * time.Second
	// maxHeaderBytes bounds an answer's status line and headers: a
	// receiver's answer is read into memory only that far.
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
	tlsConf := &tls.Config{RootCAs: e.cfg.RootCAs}
	tr := &http.Transport{
		// No proxy from the environment: the dialer judges the
		// receiver's own address.
		Proxy:           nil,
		DialContext:     e.dial,
		TLSClientConfig: tlsConf,
		// With a dialer of its own, a Transport offers HTTP/2 only when
		// asked to.
		ForceAttemptHTTP2: true,
		// A webhook has at most that many attempts under way per
		// instance: each finds a connection without waiting for another
		// attempt's, and never more than that are open, idle or not.
		MaxConnsPerHost:     store.MaxInFlightPerWebhook,
		MaxIdleConns:        store.MaxInFlightPerWebhook,
		MaxIdleConnsPerHost: store.MaxInFlightPerWebhook,
		IdleConnTimeout:     idleTimeout,
		// The attempt's context bounds the rest; these bound what it
		// would leave open.
		TLSHandshakeTimeout:    e.timeout,
		MaxResponseHeaderBytes: maxHeaderBytes,
		// No Accept-Encoding, as before: the receiver answers as it
		// likes, and the log keeps the answer as it was sent.
		DisableCompression: true,
	}
	return &sender{e: e, url: raw, tr: tr}, nil
}

// sendIn makes one of a claim's attempts in a goroutine of its own, in
// the claim's context, and hands its outcome to the engine.
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

// claimContext is the context of a claim's attempts, which share its
// deadline: one timer, and one child of the engine's context, serve them
// all, rather than one each (the engine's context is shared by every
// attempt under way, and each child registered and removed takes its
// lock).
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

// attempt sends one signed request and judges its answer.
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
	// The values of the same headers on every attempt are shared: nothing
	// writes them.
	req.Header["Content-Type"] = contentTypeJSON
	req.Header["User-Agent"] = userAgent
	// An event is safe to send twice: it carries its webhook-id, which
	// receivers deduplicate on. A key with no value marks the request so
	// without sending it, and the Transport then sends it again on a new
	// connection when a kept-alive one closes before any answer (a
	// receiver's idle timeout meeting the request).
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
		// Bytes read before this request went out cannot answer it: an
		// earlier request's extra answer, which must not be taken for
		// this one's. The connection goes with it.
		w.conn.Load().Close()
		o.Duration = time.Since(began)
		o.Error = "the receiver sent an answer before this request was sent (an extra answer to an earlier one): the connection was closed, and the answer not taken"
		return o
	}
	// What the log keeps, and no more: closing a longer body before its
	// end closes the connection instead of reading the rest. An empty one
	// (a 204) takes no buffer.
	var kept []byte
	var rerr error
	if resp.ContentLength != 0 {
		kept, rerr = io.ReadAll(&io.LimitedReader{R: resp.Body, N: ResponseLimit})
	}
	o.Duration = time.Since(began)
	if rerr != nil {
		rerr = errors.New(e.describe(rerr))
	}
	outcome(&o, resp.StatusCode, kept, rerr)
	return o
}

// dial connects to a receiver: the dialer refuses what the policy
// refuses, at the address it is about to use, and the connection counts
// what it reads.
func (e *Engine) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := e.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c}, nil
}

// watchedConn counts the reads that brought bytes, and notes the count
// when a request starts going out, so that an attempt can tell whether
// its answer came after its request.
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

// watch is an attempt's view of the connection it got. HTTP/1.1 has no
// request ids: an answer is the next one on the connection. A receiver
// that answers twice leaves its second answer on a connection that goes
// back to the pool; the Transport closes such a connection when it
// notices, but a request may take it before then, and would read that
// answer as its own. An answer to a request needs bytes read after the
// request started going out: that is judged when the answer's first
// byte is there, while the connection is still this request's.
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

// gotFirstByte notes whether the answer was all read before the request
// started going out.
func (w *watch) gotFirstByte() {
	c := w.conn.Load()
	w.stale.Store(c != nil && (c.armed.Load() || c.reads.Load() == c.readsAtWrite.Load()))
}

// closeIdle closes the sender's idle connections.
func (s *sender) closeIdle() { s.tr.CloseIdleConnections() }
