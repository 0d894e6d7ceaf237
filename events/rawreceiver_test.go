package events_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"petstore/domains/domaintest"
	"petstore/events/webhooktest"
)

// rawReceiver is a webhook receiver on a raw socket: it reads requests
// with net/http's parser and verifies them with the Standard Webhooks
// library (the signature, not the timestamp's freshness: tests move their
// clocks), and answers each with what its reply says, byte for byte,
// which is how hostile and broken receivers are played.
type rawReceiver struct {
	t     *testing.T
	URL   string
	reply func(r rawRequest) reply

	mu      sync.Mutex
	verify  *standardwebhooks.Webhook
	got     []rawRequest
	conns   int
	written int64 // bytes written to the service, all connections
	ended   int   // replies that ended their connection
}

// rawRequest is a request the receiver read: its webhook-id, its
// connection (from 1) and its place on it (from 1), and how many times
// its webhook-id came before it.
type rawRequest struct {
	ID           string
	Conn, OnConn int
	Before       int
}

// reply writes an answer (and whatever else) to w; it ends the connection
// unless it returns true. A nil reply closes the connection unanswered.
type reply func(w io.Writer) (keep bool)

// answer is a reply of status, with a body, kept alive.
func answer(status int, body string) reply {
	return func(w io.Writer) bool {
		_, err := fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Length: %d\r\n\r\n%s", status, http.StatusText(status), len(body), body)
		return err == nil
	}
}

func newRawReceiver(t *testing.T, reply func(r rawRequest) reply) *rawReceiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &rawReceiver{t: t, URL: "http://" + ln.Addr().String() + "/hook", reply: reply}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after the listener and the connections close
	domaintest.ServeConns(t, ln, func(c net.Conn) {
		t.Cleanup(func() { c.Close() })
		r.mu.Lock()
		r.conns++
		n := r.conns
		r.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.serve(c, n)
		}()
	})
	return r
}

// trust verifies the deliveries with secret from now on.
func (r *rawReceiver) trust(secret string) {
	wh := webhooktest.Verifier(r.t, secret)
	r.mu.Lock()
	r.verify = wh
	r.mu.Unlock()
}

// countingWriter counts the bytes written to the service.
type countingWriter struct {
	r *rawReceiver
	w io.Writer
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.r.mu.Lock()
	c.r.written += int64(n)
	c.r.mu.Unlock()
	return n, err
}

func (r *rawReceiver) serve(c net.Conn, conn int) {
	defer c.Close()
	// A small buffer of its own: what it wrote is then near what the
	// service read, whose kernel buffers are the rest.
	c.(*net.TCPConn).SetWriteBuffer(32 << 10)
	br := bufio.NewReader(c)
	for on := 1; ; on++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		r.mu.Lock()
		if r.verify == nil {
			r.t.Errorf("a delivery before the receiver knew its secret: %s", body)
		} else if err := r.verify.VerifyIgnoringTimestamp(body, req.Header); err != nil {
			r.t.Errorf("a delivery failed verification: %v", err)
		}
		rr := rawRequest{ID: req.Header.Get("webhook-id"), Conn: conn, OnConn: on}
		for _, g := range r.got {
			if g.ID == rr.ID {
				rr.Before++
			}
		}
		r.got = append(r.got, rr)
		r.mu.Unlock()
		rep := r.reply(rr)
		keep := rep != nil && rep(countingWriter{r, c})
		if !keep {
			r.mu.Lock()
			r.ended++
			r.mu.Unlock()
			return
		}
	}
}

// requests are the requests read so far.
func (r *rawReceiver) requests() []rawRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]rawRequest(nil), r.got...)
}

// waitEnded waits until n replies have ended their connections, and
// returns the bytes written to the service by then.
func (r *rawReceiver) waitEnded(n int) int64 {
	r.t.Helper()
	var written int64
	domaintest.WaitFor(r.t, 30*time.Second, 5*time.Millisecond, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.ended < n {
			return fmt.Errorf("%d of %d replies ended their connections", r.ended, n)
		}
		written = r.written
		return nil
	})
	return written
}

// endless writes chunk to w until a write fails (the service closed the
// connection) or limit bytes are written; it reports the error.
func endless(w io.Writer, chunk []byte, limit int64) error {
	var n int64
	for n < limit {
		k, err := w.Write(chunk)
		n += int64(k)
		if err != nil {
			return err
		}
	}
	return errors.New("the limit was reached: the service went on reading")
}
