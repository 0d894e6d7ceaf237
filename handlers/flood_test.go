package handlers_test

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/domains"
	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
	"petstore/handlers"
	"petstore/store"
	"petstore/store/storetest"
)

// TestFloodOfUnknownHostsAndChallenges: 20,000 requests from one address
// with random Host headers, half of them for ACME challenge paths, on the
// plain-HTTP listener as main.go builds it and the default rate limit. The
// rate limit answers most with 429 before any host routing or challenge
// lookup, the store sees no lookup for those, and the log grows by a few
// lines (421s and 429s are summarized once a minute, not logged each).
func TestFloodOfUnknownHostsAndChallenges(t *testing.T) {
	var logs domaintest.SyncBuffer
	var counter *storetest.ReadCounter
	var manager *domains.Manager
	ts := newTestServer(t, func(c *handlers.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.RateLimit = handlers.DefaultRateLimit
		counter = &storetest.ReadCounter{Store: c.Store.(store.Store)}
		manager = domaintest.NewManager(t, domains.Config{
			Store:   counter,
			Checker: &dnscheck.Checker{Resolvers: []string{"127.0.0.1:9"}, Timeout: 100 * time.Millisecond},
			// A CA that is never reached: only the challenge handler is used.
			ACME: &domains.ACME{CA: "https://127.0.0.1:9/directory"},
		})
		c.Domains = manager
	})
	// In process, from one peer address: the 429s close their connections
	// (to give descriptors back), so over TCP each request would cost a
	// new connection, and the test minutes.
	h := ts.srv.RateLimited(manager.HTTPChallengeHandler(ts.srv.HTTPSRedirect()))
	linesBefore := strings.Count(logs.String(), "\n")
	readsBefore := counter.Reads()

	const n, workers = 20000, 4
	var statuses sync.Map // int -> *atomic.Int64
	var challengesServed atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				path := "/pets"
				if i%2 == 0 {
					path = fmt.Sprintf("/.well-known/acme-challenge/%x", rand.Uint64())
				}
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.Host = fmt.Sprintf("h%x.example.net", rand.Uint64())
				req.RemoteAddr = "192.0.2.7:40000"
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusTooManyRequests && i%2 == 0 {
					challengesServed.Add(1)
				}
				v, _ := statuses.LoadOrStore(rec.Code, new(atomic.Int64))
				v.(*atomic.Int64).Add(1)
			}
		}()
	}
	wg.Wait()
	counts := map[int]int64{}
	statuses.Range(func(k, v any) bool { counts[k.(int)] = v.(*atomic.Int64).Load(); return true })
	lines := strings.Count(logs.String(), "\n") - linesBefore
	reads := counter.Reads() - readsBefore
	t.Logf("statuses %v; %d challenge requests past the rate limit; %d storage reads; %d log lines", counts, challengesServed.Load(), reads, lines)
	if counts[http.StatusTooManyRequests] < n/2 {
		t.Errorf("only %d of %d requests got 429", counts[http.StatusTooManyRequests], n)
	}
	for st := range counts {
		if st != http.StatusTooManyRequests && st != http.StatusMisdirectedRequest && st != http.StatusNotFound && st != http.StatusPermanentRedirect {
			t.Errorf("%d requests answered %d", counts[st], st)
		}
	}
	// The rate limit runs first, so no refused request reaches the
	// challenge handler; and the ones it lets through are for names that
	// are not attached, which the challenge handler never looks up.
	if reads != 0 {
		t.Errorf("%d storage reads for %d challenge requests for unattached names past the rate limit", reads, challengesServed.Load())
	}
	if lines > 300 {
		t.Errorf("the log grew by %d lines:\n%.2000s", lines, logs.String())
	}
}
