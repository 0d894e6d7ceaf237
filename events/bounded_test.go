package events

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"petstore/events/webhooktest"
	"petstore/store"
)

// The engine keeps maxSigners signers: one more forgets the least recently
// used, and a signer used before each of the others stays.
func TestEngineForgetsTheLeastRecentlyUsedSigner(t *testing.T) {
	e := testEngine(t, nil)
	secrets := make([]string, maxSigners+1)
	for i := range secrets {
		secrets[i] = NewSecret()
	}
	hot, err := e.signer(secrets[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets[1:] {
		if again, err := e.signer(secrets[0]); err != nil || again != hot {
			t.Fatalf("the signer used before every other was made again (%v)", err)
		}
		if _, err := e.signer(s); err != nil {
			t.Fatal(err)
		}
	}
	if e.signers.Contains(secrets[1]) {
		t.Error("the least recently used signer is still kept")
	}
	if n := e.signers.Len(); n != maxSigners {
		t.Errorf("%d signers kept, want %d", n, maxSigners)
	}
}

// The engine keeps maxSigners senders: one more forgets the least recently
// used, whose idle connection to its receiver is closed then.
func TestEngineForgetsTheLeastRecentlyUsedSender(t *testing.T) {
	secret := NewSecret()
	rcv := webhooktest.New(t, webhooktest.Options{Secret: secret})
	closed := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(rcv)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	e := testEngine(t, nil)
	first, err := e.sender(store.Webhook{ID: 1, URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	first.send(context.Background(), testJobs(t, e, srv.URL, secret, 1)[0], time.Now().Add(Timeout))
	if f := outcomes(t, e, 1)[0]; !f.Outcome.Succeeded {
		t.Fatalf("outcome: %+v", f.Outcome)
	}
	e.wg.Wait()
	hot := store.Webhook{ID: 2, URL: "http://hot.test/"}
	hotSender, err := e.sender(hot)
	if err != nil {
		t.Fatal(err)
	}
	for id := int64(3); id <= maxSigners+1; id++ {
		if s, err := e.sender(hot); err != nil || s != hotSender {
			t.Fatalf("the sender used before every other was made again (%v)", err)
		}
		if _, err := e.sender(store.Webhook{ID: id, URL: "http://other.test/"}); err != nil {
			t.Fatal(err)
		}
	}
	if e.senders.Contains(senderKey{1, srv.URL}) {
		t.Fatal("the least recently used sender is still kept")
	}
	select {
	case <-closed:
	case <-time.After(Timeout):
		t.Fatal("the forgotten sender's idle connection is still open")
	}
	if n := e.senders.Len(); n != maxSigners {
		t.Errorf("%d senders kept, want %d", n, maxSigners)
	}
}
