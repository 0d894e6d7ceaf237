package events

import (
	"bufio"
	"context"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"petstore/domains/domaintest"
	"petstore/events/webhooktest"
	"petstore/store"
)

// rawReceiver is a real HTTP/1.1 server read with net/http's request
// parser, in control of when it answers: answerAfter requests read on a
// connection are answered together, and closeAfterOne answers the first
// request of each connection with Connection: close and drops the rest.
type rawReceiver struct {
	t             *testing.T
	ln            net.Listener
	verify        *standardwebhooks.Webhook
	answerAfter   int
	closeAfterOne bool

	mu    sync.Mutex
	ids   []string // webhook-ids, verified, in the order read
	conns int
}

func newRawReceiver(t *testing.T, secret string, answerAfter int, closeAfterOne bool) *rawReceiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	r := &rawReceiver{t: t, ln: ln, verify: wh, answerAfter: answerAfter, closeAfterOne: closeAfterOne}
	domaintest.ServeConns(t, ln, func(c net.Conn) {
		r.mu.Lock()
		r.conns++
		r.mu.Unlock()
		go r.serve(c)
	})
	return r
}

func (r *rawReceiver) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		pending := 0
		for pending < r.answerAfter {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				return
			}
			if err := r.verify.Verify(body, req.Header); err != nil {
				r.t.Errorf("signature: %v", err)
				return
			}
			r.mu.Lock()
			r.ids = append(r.ids, req.Header.Get("webhook-id"))
			r.mu.Unlock()
			pending++
			if r.closeAfterOne {
				c.Write([]byte("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"))
				return
			}
		}
		for range pending {
			if _, err := c.Write([]byte("HTTP/1.1 204 No Content\r\n\r\n")); err != nil {
				return
			}
		}
	}
}

func (r *rawReceiver) got() ([]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ids...), r.conns
}

// testJobs are n attempts of distinct events to url, signed with secret.
func testJobs(t *testing.T, e *Engine, url, secret string, n int) []job {
	sg, err := e.signer(secret)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []job
	for i := range n {
		d := &store.Claimed{
			Delivery: store.Delivery{ID: int64(i + 1), WebhookID: 1, Attempt: 1, State: store.DeliveryPending},
			Event: store.Event{ID: store.EventID{Tx: 1, Seq: uint64(i + 1)}, Type: store.EventPetCreated,
				CreatedAt: time.Now(), Data: []byte(`{"id":1}`)},
			Webhook: store.Webhook{ID: 1, URL: url, Secret: secret, Enabled: true},
		}
		e.mu.Lock()
		e.inFlight[1]++
		e.mu.Unlock()
		jobs = append(jobs, job{d, sg})
	}
	return jobs
}

// outcomes collects n outcomes that finish sent to the recorder.
func outcomes(t *testing.T, e *Engine, n int) []store.Finished {
	var out []store.Finished
	for range n {
		select {
		case f := <-e.finished:
			out = append(out, f)
		case <-time.After(2 * Timeout):
			t.Fatalf("%d of %d outcomes", len(out), n)
		}
	}
	return out
}

func testEngine(t *testing.T, roots *x509.CertPool) *Engine {
	return New(Config{Policy: Policy{AllowPrivate: true}, RootCAs: roots})
}

// startPipelined starts a raw receiver (newRawReceiver with answerAfter
// and closeAfterOne), a pipelining sender to its path, and an exchange
// of three attempts on one connection, closed when the test ends; wait
// waits for the exchange to end, which a test must do before the
// connection closes.
func startPipelined(t *testing.T, answerAfter int, closeAfterOne bool, path string) (r *rawReceiver, e *Engine, s *sender, wait func()) {
	t.Helper()
	secret, _ := NewSecret()
	r = newRawReceiver(t, secret, answerAfter, closeAfterOne)
	e = testEngine(t, nil)
	s, err := e.newSender("http://" + r.ln.Addr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	s.pipelining = true
	c := &conn{s: s}
	t.Cleanup(c.close)
	return r, e, s, goExchange(c, testJobs(t, e, s.url.String(), secret, 3))
}

// Attempts waiting together go out together on one connection, and their
// answers come back in order: the receiver answers none until it has read
// all three, which it could not without pipelining.
func TestSenderPipelines(t *testing.T) {
	r, e, _, wait := startPipelined(t, 3, false, "/hook?x=1")
	defer wait()
	for i, f := range outcomes(t, e, 3) {
		if !f.Outcome.Succeeded || f.Outcome.Status != 204 || f.Claimed.ID != int64(i+1) {
			t.Errorf("outcome %d: %+v of delivery %d", i, f.Outcome, f.Claimed.ID)
		}
	}
	if ids, conns := r.got(); len(ids) != 3 || conns != 1 {
		t.Errorf("the receiver got %v on %d connections; want 3 events on 1", ids, conns)
	}
}

// A receiver that closes each connection after one answer gets each event
// once: the requests written after the answered one are sent again, one
// per connection, and the sender stops pipelining to it.
func TestSenderReceiverClosingAfterEachAnswer(t *testing.T) {
	r, e, s, wait := startPipelined(t, 1, true, "/")
	for i, f := range outcomes(t, e, 3) {
		if !f.Outcome.Succeeded {
			t.Errorf("outcome %d: %+v", i, f.Outcome)
		}
	}
	wait() // the sender decides on pipelining after the last outcome
	ids, conns := r.got()
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("%s delivered twice", id)
		}
		seen[id] = true
	}
	if len(seen) != 3 || conns != 3 {
		t.Errorf("the receiver got %v on %d connections; want 3 events, once each, on 3", ids, conns)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pipelining {
		t.Error("still pipelining to a receiver that closes after each answer")
	}
}

// https receivers: the certificate is verified against the roots given,
// and a connection carries several attempts.
func TestSenderHTTPS(t *testing.T) {
	secret, _ := NewSecret()
	rcv := webhooktest.New(t, webhooktest.Options{Secret: secret})
	var mu sync.Mutex
	var conns int
	srv := httptest.NewUnstartedServer(rcv)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	// Not trusted: refused.
	e := testEngine(t, nil)
	s, err := e.newSender(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{s: s}
	wait := goExchange(c, testJobs(t, e, srv.URL, secret, 1))
	if f := outcomes(t, e, 1)[0]; f.Outcome.Succeeded || f.Outcome.Error == "" {
		t.Errorf("an untrusted certificate: %+v", f.Outcome)
	}
	wait()
	c.close()

	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	e = testEngine(t, roots)
	if s, err = e.newSender(srv.URL); err != nil {
		t.Fatal(err)
	}
	s.pipelining = true
	c = &conn{s: s}
	defer c.close()
	jobs := testJobs(t, e, srv.URL, secret, 4)
	defer goExchange(c, jobs[:1], jobs[1:])()
	for i, f := range outcomes(t, e, 4) {
		if !f.Outcome.Succeeded {
			t.Errorf("outcome %d: %+v", i, f.Outcome)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if got := rcv.Events(); len(got) != 4 || conns != 2 {
		t.Errorf("the receiver got %d events on %d connections; want 4 on 2 (one refused, one kept)", len(got), conns)
	}
}

// goExchange makes the batches' exchanges on c, one after the other, in a
// goroutine; the function it returns waits until they are over, so that a
// test closes c, or reads what the sender decided, only after them.
func goExchange(c *conn, batches ...[]job) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, b := range batches {
			c.exchange(context.Background(), b)
		}
	}()
	return func() { <-done }
}
