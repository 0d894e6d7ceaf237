package events

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store"
)

// BenchmarkAttempts makes attempts, a webhook's slots of them at a time,
// to a lean receiver on loopback that answers 204 on kept-alive
// connections: the sender's cost per delivery (with the receiver's, in
// the same process).
func BenchmarkAttempts(b *testing.B) {
	e, s, sg, d := attemptRig(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	sent, done := 0, 0
	for done < b.N {
		for sent < b.N && sent-done < store.MaxInFlightPerWebhook {
			e.mu.Lock()
			e.inFlight[1]++
			e.mu.Unlock()
			s.send(ctx, job{d, sg}, time.Now().Add(Timeout))
			sent++
		}
		f := <-e.finished
		if !f.Outcome.Succeeded {
			b.Fatalf("%+v", f.Outcome)
		}
		done++
	}
	b.StopTimer()
	e.wg.Wait()
}

// leanReceiver starts a receiver that answers 204 to every request on
// kept-alive connections, calling got after each answer, and returns its
// URL.
func leanReceiver(b testing.TB, got func()) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	domaintest.ServeConns(b, ln, func(c net.Conn) {
		go func() {
			defer c.Close()
			br := bufio.NewReader(c)
			for {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				if _, err := c.Write([]byte("HTTP/1.1 204 No Content\r\n\r\n")); err != nil {
					return
				}
				got()
			}
		}()
	})
	return "http://" + ln.Addr().String() + "/hook"
}

// TestAttemptAllocations: an attempt on a kept-alive connection, request,
// signature and answer, allocates no more than it did after issue 32's
// trimming; most of what is left is net/http's.
func TestAttemptAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what sync.Pool keeps")
	}
	// A little above what an attempt allocates after issue 32's trimming
	// (docs/performance.md has the figures).
	const max = 72
	_, s, sg, d := attemptRig(t)
	var o store.Outcome
	n := testing.AllocsPerRun(200, func() {
		o = s.attempt(context.Background(), job{d, sg})
	})
	if !o.Succeeded {
		t.Fatalf("%+v", o)
	}
	t.Logf("%v allocations per attempt", n)
	if n > max {
		t.Errorf("an attempt allocates %v times; at most %d", n, max)
	}
}

// attemptRig is an engine, its sender to a lean receiver, a signer and a
// claimed delivery for it: what one attempt needs.
func attemptRig(tb testing.TB) (*Engine, *sender, *signer, *store.Claimed) {
	url := leanReceiver(tb, func() {})
	e := New(Config{Policy: Policy{AllowPrivate: true}})
	s, err := e.newSender(url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.closeIdle)
	secret := NewSecret()
	sg, _ := e.signer(secret)
	return e, s, sg, &store.Claimed{
		Delivery: store.Delivery{ID: 1, WebhookID: 1, Attempt: 1, State: store.DeliveryPending},
		Event: store.Event{ID: store.EventID{Tx: 1, Seq: 1}, Type: store.EventPetCreated,
			CreatedAt: time.Now(), Data: []byte(`{"id":1,"name":"Rex","categoryId":1,"status":"available"}`)},
		Webhook: store.Webhook{ID: 1, URL: url, Secret: secret, Enabled: true},
	}
}
