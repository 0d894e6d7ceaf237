package events

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/events/webhooktest"
	"petstore/store"
)

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

// https receivers: the certificate is verified against the roots given;
// a receiver that offers HTTP/2 gets it, one that does not gets HTTP/1.1,
// and one connection carries the attempts made one after the other.
func TestSenderHTTPS(t *testing.T) {
	t.Run("HTTP/2", func(t *testing.T) { testSenderHTTPS(t, true) })
	t.Run("HTTP/1.1", func(t *testing.T) { testSenderHTTPS(t, false) })
}

func testSenderHTTPS(t *testing.T, h2 bool) {
	secret := NewSecret()
	rcv := webhooktest.New(t, webhooktest.Options{Secret: secret})
	var mu sync.Mutex
	var conns int
	protos := map[string]int{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protos[r.Proto]++
		mu.Unlock()
		rcv.ServeHTTP(w, r)
	}))
	srv.EnableHTTP2 = h2
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ctx := context.Background()

	// Not trusted: refused.
	e := testEngine(t, nil)
	s, err := e.newSender(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	s.send(ctx, testJobs(t, e, srv.URL, secret, 1)[0], time.Now().Add(Timeout))
	if f := outcomes(t, e, 1)[0]; f.Outcome.Succeeded || !strings.Contains(f.Outcome.Error, "certificate") {
		t.Errorf("an untrusted certificate: %+v", f.Outcome)
	}
	e.wg.Wait()
	s.closeIdle()

	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	e = testEngine(t, roots)
	if s, err = e.newSender(srv.URL); err != nil {
		t.Fatal(err)
	}
	defer s.closeIdle()
	jobs := testJobs(t, e, srv.URL, secret, 4)
	s.send(ctx, jobs[0], time.Now().Add(Timeout))
	if f := outcomes(t, e, 1)[0]; !f.Outcome.Succeeded {
		t.Errorf("outcome: %+v", f.Outcome)
	}
	for _, j := range jobs[1:] {
		s.send(ctx, j, time.Now().Add(Timeout))
		if f := outcomes(t, e, 1)[0]; !f.Outcome.Succeeded {
			t.Errorf("outcome: %+v", f.Outcome)
		}
	}
	e.wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	proto := map[bool]string{true: "HTTP/2.0", false: "HTTP/1.1"}[h2]
	if got := rcv.Events(); len(got) != 4 || conns != 2 || protos[proto] != 4 {
		t.Errorf("the receiver got %d events on %d connections, by protocol %v; want 4 on 2 (one refused, one kept), over %s", len(got), conns, protos, proto)
	}
}

// leaseStore is a real store that notes each claim's lease and time, and
// each outcome's attempt against them. The store starts the lease later
// than the claim's call: a lease counted from the call ends no later.
type leaseStore struct {
	Store
	mu      sync.Mutex
	claimed map[int64][2]time.Time // when claimed, and the lease's end
	checked int
	errs    []string
}

func (l *leaseStore) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, busy []int64, limit int) ([]store.Claimed, error) {
	at := time.Now()
	out, err := l.Store.ClaimDeliveries(ctx, now, lease, busy, limit)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range out {
		l.claimed[d.ID] = [2]time.Time{at, at.Add(lease)}
	}
	return out, err
}

func (l *leaseStore) FinishDeliveries(ctx context.Context, done []store.Finished) error {
	now := time.Now()
	l.mu.Lock()
	for _, f := range done {
		c := l.claimed[f.Claimed.ID]
		end := f.Outcome.AttemptedAt.Add(f.Outcome.Duration)
		switch {
		case !now.Before(c[1]):
			l.errs = append(l.errs, fmt.Sprintf("delivery %d recorded at %s, its lease ended at %s", f.Claimed.ID, now, c[1]))
		case end.Sub(c[0]) > Timeout/10+Timeout/20:
			l.errs = append(l.errs, fmt.Sprintf("delivery %d's attempt ended %s after its claim", f.Claimed.ID, end.Sub(c[0])))
		case !strings.Contains(f.Outcome.Error, "no answer within"):
			l.errs = append(l.errs, fmt.Sprintf("delivery %d: %+v", f.Claimed.ID, f.Outcome))
		}
		l.checked++
	}
	l.mu.Unlock()
	return l.Store.FinishDeliveries(ctx, done)
}

// Every attempt ends within its timeout of its claim, its lease still
// running when its outcome is recorded: with more attempts than a
// webhook's slots to a receiver that never answers, none waits for
// another's connection or answer, so none is claimed and sent twice.
func TestAttemptsEndWithinTheirLease(t *testing.T) {
	if leaseFor(Timeout, Timeout) <= Timeout+recordWait+Timeout {
		t.Fatalf("the lease %s is not longer than an attempt and its record", leaseFor(Timeout, Timeout))
	}
	db := domaintest.OpenStore(t)
	l := &leaseStore{Store: db, claimed: map[int64][2]time.Time{}}
	dead := webhooktest.Start(t, webhooktest.Options{Hang: true})
	secret := NewSecret()
	w := store.Webhook{URL: dead.URL, Events: []string{"*"}, Enabled: true, Secret: secret}
	if err := db.CreateWebhook(context.Background(), &w, nil); err != nil {
		t.Fatal(err)
	}
	e := New(Config{Store: l, Policy: Policy{AllowPrivate: true}, Poll: 10 * time.Millisecond})
	// A tenth of the timeout, so that the test is quick; the lease is
	// the real one's rule.
	e.timeout = Timeout / 10
	e.lease = leaseFor(e.timeout, e.cfg.Timeout)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	c := store.Category{Name: "dogs"}
	if err := db.CreateCategory(ctx, &c, nil); err != nil {
		t.Fatal(err)
	}
	const n = 2 * store.MaxInFlightPerWebhook
	for i := range n - 1 {
		if err := db.CreatePet(ctx, &store.Pet{Name: fmt.Sprint("pet ", i), CategoryID: c.ID}, nil); err != nil {
			t.Fatal(err)
		}
	}
	domaintest.WaitFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.checked < n {
			return fmt.Errorf("%d of %d attempts recorded", l.checked, n)
		}
		return nil
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.errs {
		t.Error(e)
	}
}

// The dialer refuses, at connect time, the addresses of every refused
// block, IPv4-mapped or with a zone too, and lets public ones through;
// AllowPrivate lets all through.
func TestControlRefusesNotGlobal(t *testing.T) {
	var p Policy
	for _, r := range notGlobal {
		a := lastAddr(r.prefix) // a narrower entry may hold the first
		for _, addr := range []string{a.String(), a.WithZone("eth0").String()} {
			if a.Is4() {
				addr = "::ffff:" + addr
			}
			if err := p.control("tcp", net.JoinHostPort(addr, "443"), nil); err == nil || !strings.Contains(err.Error(), r.why) {
				t.Errorf("%s (in %s): %v; want refused as %s", addr, r.prefix, err, r.why)
			}
		}
		if err := (Policy{AllowPrivate: true}).control("tcp", net.JoinHostPort(a.String(), "443"), nil); err != nil {
			t.Errorf("AllowPrivate: %s refused: %v", a, err)
		}
	}
	for _, addr := range []string{"93.184.215.14:443", "[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:443", "192.0.1.1:80", "[2001:200::1]:80"} {
		if err := p.control("tcp", addr, nil); err != nil {
			t.Errorf("a public address %s was refused: %v", addr, err)
		}
	}
}

// lastAddr is the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// An answer is taken for a request only when bytes were read after the
// request started going out: what was read before is an earlier
// request's (a receiver answering twice), whatever arrives after may be
// its own.
func TestWatchRefusesAnswersReadBeforeTheRequest(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	c := &watchedConn{Conn: client}
	defer c.Close()
	go func() {
		// The receiver: an extra answer at once, then, once it has read
		// the request, the answer to it.
		server.Write([]byte("extra"))
		buf := make([]byte, 7)
		if _, err := io.ReadFull(server, buf); err == nil {
			server.Write([]byte("answer"))
		}
	}()
	buf := make([]byte, 16)
	var w watch
	stale := func() bool { w.gotFirstByte(); return w.stale.Load() }
	w.gotConn(httptrace.GotConnInfo{Conn: c, Reused: true})
	if n, _ := c.Read(buf); string(buf[:n]) != "extra" || !stale() {
		t.Fatalf("read %q before the request; stale %v, want true", buf[:n], stale())
	}
	if _, err := c.Write([]byte("request")); err != nil {
		t.Fatal(err)
	}
	if !stale() {
		t.Error("the request is written, nothing read since: want stale")
	}
	if n, _ := c.Read(buf); string(buf[:n]) != "answer" || stale() {
		t.Errorf("read %q after the request; stale %v, want false", buf[:n], stale())
	}
	// The next request on the connection starts over.
	w.gotConn(httptrace.GotConnInfo{Conn: c, Reused: true})
	if !stale() {
		t.Error("a new request that read nothing: want stale")
	}
}

// A claim's context ends at its deadline, or once each of its attempts,
// and the claim's loop, has given its share back: not before.
func TestClaimContextEndsWithItsLastAttempt(t *testing.T) {
	c := newClaimContext(context.Background(), time.Now().Add(time.Hour), 2)
	c.done()
	if err := c.Err(); err != nil {
		t.Fatalf("one of two shares given back: %v; want the context still open", err)
	}
	c.done()
	if err := c.Err(); err != context.Canceled {
		t.Fatalf("every share given back: %v; want canceled", err)
	}
	late := newClaimContext(context.Background(), time.Now().Add(-time.Second), 1)
	defer late.done()
	if err := late.Err(); err != context.DeadlineExceeded {
		t.Fatalf("past its deadline: %v; want deadline exceeded", err)
	}
}

// send is one attempt of a claim of its own, whose context ends at
// deadline: what the engine does for a claim of one delivery.
func (s *sender) send(ctx context.Context, j job, deadline time.Time) {
	s.sendIn(ctx, j, newClaimContext(ctx, deadline, 1))
}
