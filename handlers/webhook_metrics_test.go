package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"petstore/events"
	"petstore/handlers"
	"petstore/store/postgres/pgtest"
)

// testClock is a clock a test moves: it stands still unless told.
type testClock struct{ now atomic.Int64 }

func newTestClock(t time.Time) *testClock {
	c := &testClock{}
	c.now.Store(t.UnixNano())
	return c
}

func (c *testClock) Now() time.Time          { return time.Unix(0, c.now.Load()).UTC() }
func (c *testClock) Advance(d time.Duration) { c.now.Add(int64(d)) }

// withEventsOn is withEvents with the engine and the server on clock, so
// that retries come when the test moves it.
func withEventsOn(tb testing.TB, clock *testClock) serverOption {
	return func(c *handlers.Config) {
		policy := events.Policy{AllowPrivate: true}
		e := events.New(events.Config{Store: c.Store.(events.Store), Policy: policy, Poll: 10 * time.Millisecond, Retention: time.Hour, Now: clock.Now})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { e.Run(ctx); close(done) }()
		tb.Cleanup(func() { cancel(); <-done })
		c.Events, c.WebhookPolicy, c.Now = e, policy, clock.Now
	}
}

// scrapeUntil scrapes /metrics until cond holds of a scrape, and returns
// that one.
func (ts *testServer) scrapeUntil(what string, cond func(*exposition) bool) *exposition {
	ts.tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		e := ts.scrape()
		if cond(e) {
			return e
		}
		if time.Now().After(deadline) {
			ts.tb.Fatalf("waiting for %s: not within 30 s", what)
		}
	}
}

func (e *exposition) value(name string, labels ...string) float64 {
	v, _ := e.get(name, labels...)
	return v
}

// Twenty deliveries to a real receiver that answers 500 show in /metrics
// as an operator alerts on them: twenty rejected attempts, the webhook
// failing, twenty deliveries pending a retry, the events recorded and
// fanned out, the lag of their first attempts; and while the receiver
// stays down, the age of the oldest pending delivery grows with the
// clock, the retries failing in turn.
func TestWebhookMetricsFollowAFailingReceiver(t *testing.T) {
	var hits atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		http.Error(w, "down for maintenance", http.StatusInternalServerError)
	}))
	t.Cleanup(receiver.Close)
	// The engine's clock starts a minute ahead of the store's, which
	// stamps the events: each first attempt comes a minute after its
	// event, and no retry comes before the test moves the clock.
	clock := newTestClock(time.Now().Add(time.Minute))
	ts := newTestServer(t, withEventsOn(t, clock))

	// The test server's own events (its API key) are fanned out first.
	before := ts.scrapeUntil("the events so far fanned out", func(e *exposition) bool {
		return e.value("petstore_events_fanned_out_total") == e.value("petstore_events_recorded_total")
	})
	before.want(t, 1, "petstore_webhook_queue_up")
	before.want(t, 0, "petstore_webhook_deliveries_pending")
	before.want(t, 0, "petstore_webhook_oldest_pending_seconds")
	before.want(t, 0, "petstore_webhook_attempts_total", "outcome", "rejected")
	before.want(t, 0, "petstore_webhooks", "state", "failing")
	recorded := before.value("petstore_events_recorded_total")
	fanned := before.value("petstore_events_fanned_out_total")

	ts.adminDo("POST", "/admin/webhooks", `{"url":"`+receiver.URL+`","events":["pet.created"]}`).wantStatus(201)
	var cat struct{ ID int64 }
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201).decode(&cat)
	for i := range 20 {
		ts.do("POST", "/pets", fmt.Sprintf(`{"name":"pet %d","categoryId":%d}`, i, cat.ID)).wantStatus(201)
	}
	// A scrape reads the counters and the store at once, not in an order:
	// the webhook's state may lag the last attempts counted.
	e := ts.scrapeUntil("20 rejected attempts recorded", func(e *exposition) bool {
		return e.value("petstore_webhook_attempts_total", "outcome", "rejected") == 20 && e.value("petstore_webhook_deliveries_pending") == 20 &&
			e.value("petstore_webhooks", "state", "failing") == 1
	})
	if n := hits.Load(); n != 20 {
		t.Errorf("the receiver was asked %d times, want 20", n)
	}
	e.want(t, 0, "petstore_webhook_attempts_total", "outcome", "succeeded")
	e.want(t, 0, "petstore_webhook_attempts_total", "outcome", "unreachable")
	e.want(t, 1, "petstore_webhooks", "state", "failing")
	e.want(t, 0, "petstore_webhooks", "state", "healthy")
	e.want(t, 0, "petstore_webhooks", "state", "disabled")
	e.want(t, 0, "petstore_webhook_deliveries_due") // each waits for its retry
	e.want(t, 0, "petstore_webhook_oldest_due_seconds")
	e.want(t, recorded+21, "petstore_events_recorded_total") // and the category's
	e.want(t, fanned+21, "petstore_events_fanned_out_total")
	e.want(t, 20, "petstore_webhook_delivery_lag_seconds_count")
	if sum := e.value("petstore_webhook_delivery_lag_seconds_sum"); sum < 20*30 || sum > 20*60 {
		t.Errorf("lag sum %v s for 20 first attempts a minute after their events", sum)
	}
	e.want(t, 20, "petstore_webhook_delivery_lag_seconds_bucket", "le", "60")
	e.want(t, 0, "petstore_webhook_delivery_lag_seconds_bucket", "le", "30")
	age := e.value("petstore_webhook_oldest_pending_seconds")
	if age < 30 || age > 90 {
		t.Errorf("oldest pending: %v s, want about a minute", age)
	}

	// The receiver stays down: ten minutes on, every retry has been made
	// and failed, the next ones wait, and the oldest is ten minutes older.
	clock.Advance(10 * time.Minute)
	e = ts.scrapeUntil("the 20 retries recorded", func(e *exposition) bool {
		return e.value("petstore_webhook_attempts_total", "outcome", "rejected") == 40 && e.value("petstore_webhook_queue_up") == 1 && e.value("petstore_webhook_deliveries_due") == 0
	})
	e.want(t, 20, "petstore_webhook_deliveries_pending")
	e.want(t, 1, "petstore_webhooks", "state", "failing")
	e.want(t, 20, "petstore_webhook_delivery_lag_seconds_count") // retries are not a lag
	// The test clock moved exactly ten minutes; the exposition's seconds
	// are floats, so a thousandth of a second covers their rounding.
	if later := e.value("petstore_webhook_oldest_pending_seconds"); later < age+10*60-0.001 {
		t.Errorf("oldest pending after ten minutes down: %v s, was %v s", later, age)
	}
	alertRulesNameServedSeries(t, e)
}

// A first attempt counts in the lag as it starts: one whose receiver
// has not answered yet is in /metrics, where a hung receiver would
// otherwise keep its lag out until the attempt's timeout.
func TestWebhookLagCountsAnAttemptInFlight(t *testing.T) {
	got, release := make(chan struct{}, 1), make(chan struct{})
	receiver := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		got <- struct{}{}
		<-release
	}))
	t.Cleanup(receiver.Close)
	t.Cleanup(func() { close(release) }) // before Close, which waits for the handler
	clock := newTestClock(time.Now().Add(time.Minute))
	ts := newTestServer(t, func(c *handlers.Config) {
		// The attempt outlasts the test: only its start can count it.
		c.WebhookPolicy, c.Now = events.Policy{AllowPrivate: true}, clock.Now
		c.Events = events.New(events.Config{Store: c.Store.(events.Store), Policy: c.WebhookPolicy, Poll: 10 * time.Millisecond, Timeout: time.Hour, Now: clock.Now})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { c.Events.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
	})
	ts.adminDo("POST", "/admin/webhooks", `{"url":"`+receiver.URL+`","events":["category.created"]}`).wantStatus(201)
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201)
	<-got
	e := ts.scrapeUntil("the attempt in flight in the lag", func(e *exposition) bool {
		return e.value("petstore_webhook_delivery_lag_seconds_count") == 1
	})
	e.want(t, 1, "petstore_webhook_delivery_lag_seconds_bucket", "le", "60")
	e.want(t, 0, "petstore_webhook_delivery_lag_seconds_bucket", "le", "30")
	e.want(t, 0, "petstore_webhook_attempts_total", "outcome", "unreachable")
}

// alertRulesNameServedSeries: every series the alert rules of the
// operator's guide name is one a scrape serves.
func alertRulesNameServedSeries(t *testing.T, e *exposition) {
	t.Helper()
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rules, ok := strings.Cut(string(doc), "```yaml\ngroups:\n")
	rules, _, ok2 := strings.Cut(rules, "```")
	if !ok || !ok2 {
		t.Fatal("docs/operations.md has no block of Prometheus rules")
	}
	exprs := regexp.MustCompile(`(?m)^\s+expr: (.*)$`).FindAllStringSubmatch(rules, -1)
	if len(exprs) == 0 {
		t.Fatal("the rules have no expr")
	}
	for _, m := range exprs {
		for _, name := range regexp.MustCompile(`petstore_[a-z_]+`).FindAllString(m[1], -1) {
			if _, ok := e.types[name]; !ok {
				t.Errorf("the rule %q names %s, which /metrics does not serve", m[1], name)
			}
		}
	}
}

// A stopped database does not hold /metrics: the scrape answers with
// petstore_up 0 and petstore_webhook_queue_up 0, without the series read
// from the store, and with the process's own.
func TestMetricsAnswerWhileTheDatabaseIsStopped(t *testing.T) {
	t.Parallel()
	cluster := pgtest.Private(t)
	url, err := cluster.NewDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ts := startOnPostgres(t, url, withEvents(t))
	e := ts.scrape()
	e.want(t, 1, "petstore_up")
	e.want(t, 1, "petstore_webhook_queue_up")

	if err := cluster.Halt(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Resume() })
	for range 2 { // the second while the first one's reads may still wait
		e = ts.scrape()
		e.want(t, 0, "petstore_up")
		e.want(t, 0, "petstore_webhook_queue_up")
		for _, absent := range []string{"petstore_store_size_bytes", "petstore_webhook_deliveries_pending", "petstore_webhook_oldest_pending_seconds"} {
			if _, ok := e.get(absent); ok {
				t.Errorf("%s with the database stopped", absent)
			}
		}
		e.want(t, 0, "petstore_webhook_attempts_total", "outcome", "rejected")
		if _, ok := e.types["process_cpu_seconds_total"]; !ok {
			t.Error("no process series with the database stopped")
		}
	}
}
