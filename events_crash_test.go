package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"petstore/domains/domaintest"
	"petstore/store/postgres/pgtest"
)

// eventReceiver keeps what a webhook receiver got, by webhook-id, and
// verifies every signature with the Standard Webhooks library.
type eventReceiver struct {
	t      *testing.T
	mu     sync.Mutex
	verify *standardwebhooks.Webhook
	bodies map[string]string // webhook-id -> body
	pets   map[int64]bool    // pet.created's ids
	dups   int
}

// newEventReceiver starts a receiver, and returns it with its URL; it
// accepts deliveries once it trusts their secret.
func newEventReceiver(t *testing.T) (*eventReceiver, string) {
	r := &eventReceiver{t: t, bodies: map[string]string{}, pets: map[int64]bool{}}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv.URL
}

// trust makes r accept the deliveries signed with a webhook's secret.
func (r *eventReceiver) trust(t *testing.T, secret string) {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.verify = wh
}

func (r *eventReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.verify == nil || r.verify.Verify(body, req.Header) != nil {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	id := req.Header.Get("webhook-id")
	if old, ok := r.bodies[id]; ok {
		r.dups++
		if old != string(body) {
			r.t.Errorf("webhook-id %s came with two bodies:\n%s\n%s", id, old, body)
		}
	}
	r.bodies[id] = string(body)
	var e struct {
		Type string
		Data struct{ ID int64 }
	}
	_ = json.Unmarshal(body, &e)
	if e.Type == "pet.created" {
		r.pets[e.Data.ID] = true
	}
	w.WriteHeader(http.StatusOK)
}

// TestKillNineLosesNoEvent kills the service with SIGKILL at random moments
// of a write load, with one webhook subscribed to everything, and restarts
// it: every acknowledged write's event reaches the receiver, and
// duplicates share their webhook-id and body. On both stores.
func TestKillNineLosesNoEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills it several times")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "petstore")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Run("bbolt", func(t *testing.T) {
		killNineEvents(t, bin, "--data", filepath.Join(t.TempDir(), "petstore.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		killNineEvents(t, bin, "--database", pgtest.URL(t))
	})
}

func killNineEvents(t *testing.T, bin string, storeArgs ...string) {
	const adminToken = "crash-test-admin-token-of-32-chars"
	rcv, rcvURL := newEventReceiver(t)
	args := append([]string{"--rate-limit", "0", "--admin-token", adminToken, "--listen", "127.0.0.1:0", "--webhook-allow-private"}, storeArgs...)
	proc, base := startService(t, bin, args)
	c := &crashClient{t: t, base: base, http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
	var hook struct{ Secret string }
	if st := c.call(context.Background(), "POST", "/admin/webhooks", fmt.Sprintf(`{"url":%q,"events":["*"]}`, rcvURL), "Bearer "+adminToken, &hook); st != 201 {
		t.Fatalf("creating the webhook: %d", st)
	}
	rcv.trust(t, hook.Secret)
	cat := c.setUp(adminToken)

	var mu sync.Mutex
	acked := map[int64]bool{}
	for round := 1; round <= 3; round++ {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ctx.Err() == nil; i++ {
					var p struct{ ID int64 }
					st, err := c.do(ctx, "POST", "/pets", fmt.Sprintf(`{"name":"r%d-w%d-%d","categoryId":%d}`, round, w, i, cat), "", &p)
					if err != nil {
						return // the kill cut it off: not acknowledged
					}
					if st == 201 {
						mu.Lock()
						acked[p.ID] = true
						mu.Unlock()
					}
				}
			}()
		}
		time.Sleep(time.Duration(100+rand.IntN(400)) * time.Millisecond)
		kill(t, proc)
		cancel()
		wg.Wait()
		proc, c.base = startService(t, bin, args)
		c.http.CloseIdleConnections()
	}
	defer kill(t, proc)
	mu.Lock()
	n := len(acked)
	mu.Unlock()
	domaintest.WaitFor(t, 60*time.Second, 50*time.Millisecond, func() error {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		missing := 0
		for id := range acked {
			if !rcv.pets[id] {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d acknowledged pets have no pet.created at the receiver", missing, n)
		}
		return nil
	})
	rcv.mu.Lock()
	t.Logf("%d acknowledged pets over 3 kills, every pet.created received; %d events in all, %d deliveries repeated (same webhook-id and body)", n, len(rcv.bodies), rcv.dups)
	rcv.mu.Unlock()
}
