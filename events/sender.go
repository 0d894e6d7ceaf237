package events

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"petstore/store"
)

// A sender sends one webhook URL's attempts over connections of its own:
// HTTP/1.1, kept alive, and once the receiver has shown it keeps a
// connection open, the attempts waiting together written in one go and
// their answers read in order (pipelining). Each attempt is still one
// signed request; what is shared is the connection, the writes and the
// reads. net/http's Transport hands every request between three
// goroutines and writes and reads it on its own; a webhook with a backlog
// costs the service's cores the better part of that, which the API needs.
type sender struct {
	e     *Engine
	url   *url.URL
	addr  string // host:port dialled
	https bool

	queue chan job // the attempts claimed and not yet sent

	mu    sync.Mutex
	conns int // goroutines sending, each with its connection
	idle  int // of them, waiting for an attempt
	// pipelining is set once an answer kept its connection open, and
	// cleared when one closed it with requests still unanswered, so that
	// a receiver that answers once per connection gets no request twice.
	pipelining bool
}

// Limits of a sender.
const (
	// maxConns bounds one sender's connections.
	maxConns = 4
	// maxPipeline bounds the requests written together on a connection.
	maxPipeline = store.MaxInFlightPerWebhook
	// idleTimeout closes a connection unused that long.
	idleTimeout = time.Minute
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
	// A claim gives a webhook at most its slots more than it has in
	// flight, which is fewer than its slots: the queue never fills.
	s := &sender{e: e, url: u, queue: make(chan job, 2*store.MaxInFlightPerWebhook)}
	port := u.Port()
	switch u.Scheme {
	case "http":
		port = cmpOr(port, "80")
	case "https":
		s.https, port = true, cmpOr(port, "443")
	default:
		return nil, fmt.Errorf("the URL cannot be requested: scheme %q is not http or https", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, errors.New("the URL cannot be requested: it has no host")
	}
	s.addr = net.JoinHostPort(u.Hostname(), port)
	return s, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// send queues an attempt; a goroutine with a connection takes it.
func (s *sender) send(ctx context.Context, j job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue <- j
	if s.conns == 0 || s.idle == 0 && s.conns < maxConns {
		s.conns++
		s.e.wg.Add(1)
		go s.run(ctx)
	}
}

// run sends batches on one connection until it has been idle for
// idleTimeout or ctx ends.
func (s *sender) run(ctx context.Context) {
	defer s.e.wg.Done()
	c := &conn{s: s}
	defer c.close()
	idle := time.NewTimer(idleTimeout)
	defer idle.Stop()
	batch := make([]job, 0, maxPipeline)
	for {
		s.mu.Lock()
		s.idle++
		s.mu.Unlock()
		idle.Reset(idleTimeout)
		var first job
		select {
		case first = <-s.queue:
		case <-idle.C:
		case <-ctx.Done():
		}
		s.mu.Lock()
		s.idle--
		if first.d == nil {
			// Leave only with nothing queued: a send that saw this
			// goroutine idle started none.
			select {
			case first = <-s.queue:
			default:
				s.conns--
				s.mu.Unlock()
				return
			}
		}
		pipelining := s.pipelining
		s.mu.Unlock()
		if ctx.Err() != nil {
			return // the attempt is made again when its lease runs out
		}
		batch = append(batch[:0], first)
		for pipelining && len(batch) < maxPipeline {
			select {
			case j := <-s.queue:
				batch = append(batch, j)
				continue
			default:
			}
			break
		}
		c.exchange(ctx, batch)
	}
}

// conn is a sender's connection and its buffers.
type conn struct {
	s          *sender
	nc         net.Conn
	r          *bufio.Reader
	w          *bufio.Writer
	head, body []byte
	// used: an answer came on it, so a failed write means the receiver
	// closed it while it was idle, and the batch may go on a new one.
	used bool
}

func (c *conn) close() {
	if c.nc != nil {
		c.nc.Close()
		c.nc = nil
	}
}

// dial connects to the receiver: the dialer refuses what the policy
// refuses, at the address it is about to use.
func (c *conn) dial(ctx context.Context) error {
	e := c.s.e
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	nc, err := e.dialer.DialContext(ctx, "tcp", c.s.addr)
	if err != nil {
		return err
	}
	if c.s.https {
		cfg := &tls.Config{ServerName: c.s.url.Hostname(), NextProtos: []string{"http/1.1"}}
		if e.cfg.RootCAs != nil {
			cfg.RootCAs = e.cfg.RootCAs
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return err
		}
		nc = tc
	}
	c.nc, c.used = nc, false
	if c.r == nil {
		c.r, c.w = bufio.NewReaderSize(nc, 16<<10), bufio.NewWriterSize(nc, 32<<10)
	} else {
		c.r.Reset(nc)
		c.w.Reset(nc)
	}
	return nil
}

// exchange makes the batch's attempts: their requests written together,
// their answers read in order. An attempt left unanswered when the
// connection ends (closed by the receiver after an earlier answer, or
// broken by one's failure) was not made, and is sent again on a new
// connection: it is the same event, with the same webhook-id.
func (c *conn) exchange(ctx context.Context, batch []job) {
	s, e := c.s, c.s.e
	together := len(batch) // run made the batch as pipelining allowed
	for len(batch) > 0 {
		if ctx.Err() != nil {
			return
		}
		part := batch[:min(together, len(batch))]
		start := e.cfg.Now()
		began := time.Now()
		err := c.write(ctx, part, start)
		if err != nil && c.used {
			// The receiver closed an idle connection as the batch went
			// out: once more, on a new one.
			c.close()
			err = c.write(ctx, part, start)
		}
		if err != nil {
			c.close()
			if ctx.Err() != nil {
				return
			}
			for _, j := range batch {
				e.finish(ctx, j.d, failed(start, time.Since(began), err))
			}
			return
		}
		n := 0
		for n < len(part) {
			o, keep := c.read(ctx, start, began)
			if ctx.Err() != nil {
				c.close()
				return // shutting down: the leases run out and the attempts are made again
			}
			e.finish(ctx, batch[n].d, o)
			n++
			if !keep {
				c.close()
				break
			}
			c.used = true
		}
		s.mu.Lock()
		if n < len(part) {
			// Closed with requests unanswered: this receiver gets one
			// request per connection from now on.
			s.pipelining, together = false, 1
		} else if c.used {
			s.pipelining = true
		}
		s.mu.Unlock()
		batch = batch[n:]
	}
}

func failed(at time.Time, took time.Duration, err error) store.Outcome {
	return store.Outcome{AttemptedAt: at, Duration: took, Error: describe(err)}
}

// write writes the batch's requests, dialling first if need be.
func (c *conn) write(ctx context.Context, batch []job, at time.Time) error {
	if c.nc == nil {
		if err := c.dial(ctx); err != nil {
			return err
		}
	}
	nc := c.nc
	nc.SetWriteDeadline(time.Now().Add(Timeout))
	// Shutting down does not wait for a receiver that reads nothing.
	defer context.AfterFunc(ctx, func() { nc.SetWriteDeadline(time.Now()) })()
	var buf [20]byte
	ts := strconv.AppendInt(buf[:0], at.Unix(), 10)
	for _, j := range batch {
		c.body = j.d.Event.AppendJSON(c.body[:0])
		c.head = c.requestHead(c.head[:0], j, ts)
		c.w.Write(c.head)
		c.w.Write(c.body)
	}
	return c.w.Flush()
}

// requestHead appends the request line and headers of d's delivery of
// c.body, signed.
func (c *conn) requestHead(b []byte, j job, ts []byte) []byte {
	id := j.d.Event.ID.String()
	b = append(b, "POST "...)
	b = append(b, c.s.url.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, c.s.url.Host...)
	b = append(b, "\r\nUser-Agent: petstore-webhooks\r\nContent-Type: application/json\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(c.body)), 10)
	b = append(b, "\r\nWebhook-Id: "...)
	b = append(b, id...)
	b = append(b, "\r\nWebhook-Timestamp: "...)
	b = append(b, ts...)
	b = append(b, "\r\nWebhook-Signature: "...)
	b = j.signer.signature(b, id, ts, c.body)
	return append(b, "\r\n\r\n"...)
}

// read reads the next answer: the attempt's outcome, and whether the
// connection may carry more.
func (c *conn) read(ctx context.Context, start, began time.Time) (o store.Outcome, keep bool) {
	o.AttemptedAt = start
	nc := c.nc
	stop := context.AfterFunc(ctx, func() { nc.SetReadDeadline(time.Now()) })
	defer stop()
	nc.SetReadDeadline(time.Now().Add(Timeout))
	var resp *http.Response
	var err error
	for {
		resp, err = http.ReadResponse(c.r, nil)
		if err != nil || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		resp.Body.Close() // an interim answer (1xx): the final one follows
	}
	if err != nil {
		o.Duration = time.Since(began)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("the receiver closed the connection without an answer: %w", err)
		}
		o.Error = describe(err)
		return o, false
	}
	kept, rerr := io.ReadAll(io.LimitReader(resp.Body, ResponseLimit))
	_, derr := io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	// The connection goes on only past the whole answer.
	keep = rerr == nil && derr == nil && !resp.Close && resp.StatusCode != http.StatusSwitchingProtocols
	if keep {
		var one [1]byte
		if n, _ := resp.Body.Read(one[:]); n > 0 {
			keep = false // an answer too long to read through
		}
	}
	resp.Body.Close()
	o.Duration = time.Since(began)
	outcome(&o, resp.StatusCode, kept, rerr)
	return o, keep
}
