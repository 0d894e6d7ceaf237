package events_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"petstore/domains/domaintest"
	"petstore/events"
	"petstore/events/webhooktest"
	"petstore/store"
)

var ctx = context.Background()

// newReceiver starts a receiver that answers with answers, then 200. The
// test clock is far from now: the signature is checked, the timestamp's
// freshness is not.
func newReceiver(t *testing.T, answers ...int) *webhooktest.Receiver {
	return webhooktest.Start(t, webhooktest.Options{IgnoreTimestamp: true, Answers: answers})
}

// start runs an engine until the test ends.
func start(t *testing.T, s events.Store, now func() time.Time, policy events.Policy) *events.Engine {
	e := events.New(events.Config{Store: s, Now: now, Policy: policy, Poll: 10 * time.Millisecond, Retention: 24 * time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

func hook(t *testing.T, s store.Store, url string, types ...string) store.Webhook {
	t.Helper()
	w := store.Webhook{URL: url, Events: types, Enabled: true, Secret: events.NewSecret()}
	if err := s.CreateWebhook(ctx, &w, nil); err != nil {
		t.Fatal(err)
	}
	return w
}

// A receiver that answers 500 then 200 gets the event again, with the same
// id and a later timestamp, when the schedule's first wait has passed on
// the test's clock, and not before.
func TestRetryOnSchedule(t *testing.T) {
	s := domaintest.OpenStore(t)
	// The store stamps events with the real time, which retention compares
	// with this clock: it starts at now.
	t0 := time.Now().UTC().Truncate(time.Second)
	r := newReceiver(t, 500, 200)
	w, c, clk, probe := failedOnce(t, s, t0, r.URL, r.Trust)
	// The retry is due 5 s later on the test's clock: 4 s is not enough.
	clk.Advance(4 * time.Second)
	probe.looked(t, c.ID)
	if n := len(r.Deliveries()); n != 1 {
		t.Fatalf("retried before its time: %d deliveries", n)
	}
	clk.Advance(time.Second)
	list := waitDeliveryState(t, s, w.ID, 2, store.DeliverySucceeded)
	got := r.Deliveries()
	if len(got) != 2 || got[0].ID != got[1].ID || got[0].Event.Type != store.EventCategoryCreated {
		t.Fatalf("deliveries: %+v", got)
	}
	if got[1].Timestamp <= got[0].Timestamp {
		t.Errorf("the retry's timestamp %s is not later than %s", got[1].Timestamp, got[0].Timestamp)
	}
	first := list[1]
	if first.Status != 500 || first.NextAttemptAt == nil || !first.NextAttemptAt.Equal(t0.Add(5*time.Second)) {
		t.Errorf("first attempt: %+v", first)
	}
	if list[0].Attempt != 2 || list[0].Response != "answered 200" {
		t.Errorf("second attempt: %+v", list[0])
	}
}

// probe is a webhook of pet.created to a receiver of its own: it shows
// when the engine has looked at a test's clock since it moved.
type probe struct {
	s store.Store
	w store.Webhook
}

// failedOnce starts an engine on s, on a clock of its own from t0, with
// a webhook of url on category.created (trust is given its secret) and a
// probe, and makes a category: it returns once the first attempt of the
// category's event has failed and its retry is pending.
func failedOnce(t *testing.T, s store.Store, t0 time.Time, url string, trust func(string)) (store.Webhook, store.Category, *domaintest.Clock, probe) {
	t.Helper()
	clk := domaintest.NewClock(t0)
	w := hook(t, s, url, store.EventCategoryCreated)
	trust(w.Secret)
	p := newProbe(t, s)
	start(t, s, clk.Now, events.Policy{AllowPrivate: true})
	c := store.Category{Name: "dogs"}
	if err := s.CreateCategory(ctx, &c, nil); err != nil {
		t.Fatal(err)
	}
	waitDeliveryState(t, s, w.ID, 2, store.DeliveryPending)
	return w, c, clk, p
}

func newProbe(t *testing.T, s store.Store) probe {
	r := newReceiver(t)
	w := hook(t, s, r.URL, store.EventPetCreated)
	r.Trust(w.Secret)
	return probe{s, w}
}

// looked creates a pet (the probe's first) in category and waits for its
// delivery: the engine has looked at the clock since then.
func (p probe) looked(t *testing.T, category int64) {
	t.Helper()
	if err := p.s.CreatePet(ctx, &store.Pet{Name: "Rex", CategoryID: category}, nil); err != nil {
		t.Fatal(err)
	}
	waitDeliveryState(t, p.s, p.w.ID, 1, store.DeliverySucceeded)
}

// waitDeliveryState waits for a webhook's n deliveries, the newest in state.
func waitDeliveryState(t *testing.T, s store.Store, webhookID int64, n int, state string) []store.Delivery {
	t.Helper()
	var list []store.Delivery
	domaintest.WaitFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		var err error
		list, _, err = s.Deliveries(ctx, webhookID, store.Page{})
		if err != nil {
			return err
		}
		if len(list) != n || list[0].State != state {
			return fmt.Errorf("deliveries %+v, want %d, the newest %s", list, n, state)
		}
		return nil
	})
	return list
}

// A receiver that never answers delays neither the API's writes nor
// another endpoint's deliveries.
func TestDeadReceiverDelaysNoOne(t *testing.T) {
	s := domaintest.OpenStore(t)
	dead := webhooktest.Start(t, webhooktest.Options{Hang: true})
	hook(t, s, dead.URL, "*")
	live := newReceiver(t)
	w := hook(t, s, live.URL, "*")
	live.Trust(w.Secret)
	start(t, s, time.Now, events.Policy{AllowPrivate: true})

	c := store.Category{Name: "dogs"}
	if err := s.CreateCategory(ctx, &c, nil); err != nil {
		t.Fatal(err)
	}
	const n = 40
	for i := range n {
		p := store.Pet{Name: fmt.Sprint("pet ", i), CategoryID: c.ID}
		if err := s.CreatePet(ctx, &p, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Every attempt to the dead one waits for the 10 s timeout; the live
	// one gets everything before even the first of them gives up.
	began := time.Now()
	domaintest.WaitFor(t, 9*time.Second, 5*time.Millisecond, func() error {
		if got := len(live.Deliveries()); got != n+1 {
			return fmt.Errorf("the live receiver got %d events, want %d", got, n+1)
		}
		return nil
	})
	t.Logf("the live receiver had every event %s after the writes, while the dead one held its attempts", time.Since(began))
}

// Destinations on private addresses are refused when saved, and at
// connect time on the address dialled, also behind a name of the test's
// own DNS server that resolves to 127.0.0.1.
func TestSSRF(t *testing.T) {
	resolver := fakeDNS(t, map[string]string{"evil.test.": "127.0.0.1", "meta.test.": "169.254.169.254", "ten.test.": "10.0.0.1"})
	policy := events.Policy{Resolver: resolver}
	for _, u := range []string{
		"http://127.0.0.1/", "http://[::1]/", "http://10.1.2.3/", "http://192.168.0.1/", "http://172.16.0.1/",
		"http://169.254.169.254/latest/meta-data", "http://[fe80::1]/", "http://224.0.0.1/", "http://0.0.0.0/",
		"http://[::]/", "http://localhost/", "http://evil.test/", "http://meta.test/", "http://ten.test:8080/",
		"ftp://example.com/", "file:///etc/passwd", "http://user:pw@example.com/", "/relative",
		// IANA's special-purpose blocks not globally reachable, and those
		// that embed an IPv4 address a translator or relay would reach.
		"http://[64:ff9b::a00:1]/", "http://[64:ff9b:1::1]/", "http://[2002:a00:1::1]/", "http://[::a00:1]/",
		"http://[::ffff:10.0.0.1]/", "http://[fec0::1]/", "http://192.0.0.1/", "http://192.0.0.170/",
		"http://192.0.2.1/", "http://198.51.100.7/", "http://203.0.113.9/", "http://100.64.0.1/",
		"http://198.18.0.1/", "http://255.255.255.255/", "http://240.0.0.1/", "http://[2001:db8::1]/",
		"http://[2001::1]/", "http://[3fff::1]/", "http://[100::1]/", "http://[5f00::1]/", "http://[fc00::1]/",
		"http://[fe80::1%25eth0]/", "http://[ff02::1]/",
		// Not a port: no delivery could ever be made.
		"http://93.184.215.14:0/", "https://93.184.215.14:65536/",
	} {
		err := policy.CheckURL(ctx, u)
		if err == nil {
			t.Errorf("%s was accepted", u)
			continue
		}
		t.Logf("%s: %v", u, err)
	}
	for _, u := range []string{"http://93.184.215.14/", "https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/hook"} {
		if err := policy.CheckURL(ctx, u); err != nil {
			t.Errorf("a public address was refused: %s: %v", u, err)
		}
	}
	if err := (events.Policy{AllowPrivate: true}).CheckURL(ctx, "http://127.0.0.1:9/"); err != nil {
		t.Errorf("--webhook-allow-private refused a loopback URL: %v", err)
	}

	// At connect time: URLs saved past the check (as a name that later
	// resolves elsewhere would be) are refused on the address dialled.
	s := domaintest.OpenStore(t)
	r := newReceiver(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(r.URL, "http://"))
	byName := hook(t, s, "http://evil.test:"+port+"/", "*")
	byAddr := hook(t, s, r.URL, "*")
	start(t, s, time.Now, policy)
	c := store.Category{Name: "dogs"}
	if err := s.CreateCategory(ctx, &c, nil); err != nil {
		t.Fatal(err)
	}
	for _, w := range []store.Webhook{byName, byAddr} {
		list := waitDeliveryState(t, s, w.ID, 2, store.DeliveryPending)
		if !strings.Contains(list[1].Error, "127.0.0.1 is a loopback address") {
			t.Errorf("%s: the refused attempt says %q", w.URL, list[1].Error)
		}
	}
	if n := len(r.Deliveries()); n != 0 {
		t.Errorf("the loopback receiver got %d requests", n)
	}
}

// fakeDNS serves A records of names on a DNS server of the test's own and
// returns a resolver that asks it.
func fakeDNS(t *testing.T, names map[string]string) *net.Resolver {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, NotifyStartedFunc: func() { close(started) }, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		for _, qq := range q.Question {
			if ip, ok := names[strings.ToLower(qq.Name)]; ok && qq.Qtype == dns.TypeA {
				rr, _ := dns.NewRR(qq.Name + " 60 IN A " + ip)
				m.Answer = append(m.Answer, rr)
			}
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	addr := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

// gatedStore is a real store whose first FinishDeliveries waits for the
// test's signal, and which counts the calls and the outcomes they carry.
type gatedStore struct {
	store.Store
	gate    chan struct{}
	mu      sync.Mutex
	calls   int
	records int
}

func (g *gatedStore) FinishDeliveries(ctx context.Context, done []store.Finished) error {
	g.mu.Lock()
	g.calls++
	g.records += len(done)
	first := g.calls == 1
	g.mu.Unlock()
	if first {
		<-g.gate
	}
	return g.Store.FinishDeliveries(ctx, done)
}

// Attempts are recorded in batches: while one record is being written,
// the attempts go on (a slot is free once its request ends, more than a
// webhook's slots in all), each delivery stays leased and is not sent
// again, and what ended meanwhile is recorded by one more call.
func TestAttemptsAreRecordedInBatches(t *testing.T) {
	db := domaintest.OpenStore(t)
	g := &gatedStore{Store: db, gate: make(chan struct{})}
	r := newReceiver(t)
	w := hook(t, db, r.URL, store.EventCategoryCreated)
	r.Trust(w.Secret)
	start(t, g, time.Now, events.Policy{AllowPrivate: true})
	const n = 3 * store.MaxInFlightPerWebhook
	for i := range n {
		if err := db.CreateCategory(ctx, &store.Category{Name: fmt.Sprintf("c%d", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	domaintest.WaitFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		if got := len(r.Deliveries()); got < n {
			return fmt.Errorf("%d of %d delivered while the first record waits", got, n)
		}
		return nil
	})
	close(g.gate)
	domaintest.WaitFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		list, _, err := db.Deliveries(ctx, w.ID, store.Page{Limit: 100})
		if err != nil || len(list) != n {
			return fmt.Errorf("%d deliveries (%v), want %d: none made twice", len(list), err, n)
		}
		for _, d := range list {
			if d.State != store.DeliverySucceeded {
				return fmt.Errorf("delivery %d: %s", d.ID, d.State)
			}
		}
		return nil
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.calls > 2 || g.records != n {
		t.Errorf("%d outcomes recorded by %d calls; want %d by at most 2 (one waited, the next took the rest)", g.records, g.calls, n)
	}
	seen := map[string]bool{}
	for _, rec := range r.Deliveries() {
		if seen[rec.ID] {
			t.Errorf("event %s delivered twice", rec.ID)
		}
		seen[rec.ID] = true
	}
}
