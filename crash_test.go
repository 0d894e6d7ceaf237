package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/events/webhooktest"
	"petstore/store/boltstore/bolttest"
	"petstore/store/postgres/pgtest"
)

// TestKillNineLosesNoAcknowledgedWrite runs the real binary, hammers it with
// concurrent writers, kills it with SIGKILL at a random moment, restarts it
// on the same file and checks that every write answered 2xx is there, that
// stock and orders still agree, and that the bbolt file is consistent.
// It repeats that for several rounds.
//
// What can be asserted when writes race the kill: a write answered 2xx
// must be visible; a write in flight at the kill (sent, no answer read) may
// or may not be. The checks below therefore hold the acknowledged writes
// exactly and read the in-flight ones back to learn which way they went.
func TestKillNineLosesNoAcknowledgedWrite(t *testing.T) {
	parallel(t)
	if testing.Short() {
		t.Skip("builds the binary and kills it several times")
	}
	const (
		rounds       = 5
		orderPets    = 3
		stockPets    = 2
		initialStock = 100000
		adminToken   = "crash-test-admin-token-of-32-chars"
	)
	dir := t.TempDir()
	bin := buildService(t, upgradeOldVersion)
	data := filepath.Join(dir, "petstore.db")
	args := []string{"--data", data, "--rate-limit", "0", "--admin-token", adminToken, "--listen", "127.0.0.1:0"}

	proc, base := startService(t, exec.Command(bin, args...))
	c := &crashClient{t: t, base: base, http: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 32},
	}}

	// Setup: an API key, a category, pets with stock.
	cat := c.setUp(adminToken)
	m := &crashModel{
		pets:       map[int64]string{},
		orders:     map[int64]*orderRec{},
		orderPets:  map[int64]bool{},
		stock:      map[int64]*stockRec{},
		initial:    initialStock,
		categoryID: cat,
	}
	for i := range orderPets + stockPets {
		var p struct{ ID int64 }
		name := fmt.Sprintf("setup-%d", i)
		c.mustCall("POST", "/pets", fmt.Sprintf(`{"name":%q,"categoryId":%d}`, name, cat), 201, &p)
		m.pets[p.ID] = name
		if i < orderPets {
			c.mustCall("PUT", fmt.Sprintf("/store/inventory/%d", p.ID), fmt.Sprintf(`{"quantity":%d}`, initialStock), 200, nil)
			m.orderPets[p.ID] = true
			m.orderPetIDs = append(m.orderPetIDs, p.ID)
		} else {
			m.stock[p.ID] = &stockRec{acked: 0}
		}
	}

	for round := 1; round <= rounds; round++ {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		counts := m.runWriters(ctx, &wg, c, round)
		after := time.Duration(50+rand.IntN(451)) * time.Millisecond
		time.Sleep(after)
		kill(t, proc)
		cancel()
		wg.Wait()

		checkBolt(t, data)
		proc, c.base = startService(t, exec.Command(bin, args...))
		c.http.CloseIdleConnections()
		summary, wrong := m.verify(t, c)
		outcome := fmt.Sprintf("all %d acknowledged writes of the round were found", counts.total())
		if wrong > 0 {
			outcome = fmt.Sprintf("%d acknowledged writes (of all rounds) are missing or wrong", wrong)
		}
		t.Logf("round %d: killed after %v; acknowledged: %d pets, %d orders, %d cancellations, %d completions, %d stock sets; "+
			"writers cut off by the kill: %d; after restart %s (%s)",
			round, after, counts.pets.Load(), counts.orders.Load(), counts.cancels.Load(), counts.completes.Load(), counts.stockSets.Load(),
			counts.cutOff.Load(), outcome, summary)
		if t.Failed() {
			break
		}
	}
	kill(t, proc)
	checkBolt(t, data)
}

// startService starts the service, cmd, and returns it with its base URL
// once it listens.
func startService(t *testing.T, cmd *exec.Cmd) (*domaintest.Process, string) {
	t.Helper()
	proc := domaintest.StartProcess(t, cmd)
	base, err := proc.WaitOutput(15*time.Second, listeningOn)
	if err != nil {
		t.Fatalf("the service did not listen: %v\n%s", err, proc.Out.Tail())
	}
	return proc, base
}

// kill sends SIGKILL and waits for the process to be gone.
func kill(t *testing.T, proc *domaintest.Process) {
	t.Helper()
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
}

// checkBolt runs bbolt's consistency check on the file after a crash.
func checkBolt(t *testing.T, path string) {
	t.Helper()
	if err := bolttest.Check(path); err != nil {
		t.Fatalf("bbolt check after the kill: %v", err)
	}
}

// crashClient talks to whichever process is running.
type crashClient struct {
	t    *testing.T
	base string
	key  string
	http *http.Client
}

// do sends a request, with the API key on writes, through
// domaintest.DoJSON: a status is an acknowledgement only once the whole
// answer is read.
func (c *crashClient) do(ctx context.Context, method, path, body, auth string, out any) (int, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	} else if method != "GET" {
		req.Header.Set("X-API-Key", c.key)
	}
	return domaintest.DoJSON(c.http, req, out)
}

func (c *crashClient) call(ctx context.Context, method, path, body, auth string, out any) int {
	c.t.Helper()
	st, err := c.do(ctx, method, path, body, auth, out)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return st
}

func (c *crashClient) mustCall(method, path, body string, want int, out any) {
	c.t.Helper()
	if st := c.call(context.Background(), method, path, body, "", out); st != want {
		c.t.Fatalf("%s %s: status %d, want %d", method, path, st, want)
	}
}

// setUp creates the API key c writes with and a category, and returns the
// category's id.
func (c *crashClient) setUp(adminToken string) int64 {
	c.t.Helper()
	var key struct{ Secret string }
	if st := c.call(context.Background(), "POST", "/admin/api-keys", `{"name":"crash"}`, "Bearer "+adminToken, &key); st != 201 {
		c.t.Fatalf("creating an API key: %d", st)
	}
	c.key = key.Secret
	var cat struct{ ID int64 }
	c.mustCall("POST", "/categories", `{"name":"crash"}`, 201, &cat)
	return cat.ID
}

// seedPet makes a crashClient for base that writes with a new API key
// named keyName, and creates a category and a pet in it with that client;
// it returns the client and their ids.
func seedPet(t *testing.T, base, keyName string) (c *crashClient, catID, petID int64) {
	t.Helper()
	c = &crashClient{t: t, base: base, http: &http.Client{Timeout: 30 * time.Second}}
	var k struct{ Secret string }
	if st := c.call(context.Background(), http.MethodPost, "/admin/api-keys", `{"name":"`+keyName+`"}`, "Bearer "+domaintest.AdminToken, &k); st != http.StatusCreated {
		t.Fatalf("POST /admin/api-keys: %d", st)
	}
	c.key = k.Secret
	var cat struct{ ID int64 }
	c.mustCall(http.MethodPost, "/categories", `{"name":"dogs"}`, http.StatusCreated, &cat)
	var pet struct{ ID int64 }
	c.mustCall(http.MethodPost, "/pets", fmt.Sprintf(`{"name":"Rex","categoryId":%d}`, cat.ID), http.StatusCreated, &pet)
	return c, cat.ID, pet.ID
}

// listAll follows the Link headers of a list to its end.
func listAll[T any](c *crashClient, path string) []T {
	c.t.Helper()
	var all []T
	next := path
	for next != "" {
		res, err := c.http.Get(c.base + next)
		if err != nil {
			c.t.Fatal(err)
		}
		var page []T
		err = json.NewDecoder(res.Body).Decode(&page)
		res.Body.Close()
		if err != nil || res.StatusCode != 200 {
			c.t.Fatalf("GET %s: %d %v", next, res.StatusCode, err)
		}
		all = append(all, page...)
		next = ""
		if m := regexp.MustCompile(`<([^>]+)>; rel="next"`).FindStringSubmatch(res.Header.Get("Link")); m != nil {
			next = m[1]
		}
	}
	return all
}

// The model: what the clients were told, and what was in flight.

type orderRec struct {
	pet  int64
	qty  int
	busy bool // a cancellation or completion is under way

	complete         bool // acknowledged complete
	completeInFlight bool
	cancelled        bool // acknowledged cancelled: must be gone
	cancelInFlight   bool
}

type stockRec struct {
	acked    int  // last value acknowledged
	inFlight *int // value sent when the kill came, if any
	next     int
}

type crashModel struct {
	mu          sync.Mutex
	pets        map[int64]string // acknowledged pets and their names
	orders      map[int64]*orderRec
	orderPets   map[int64]bool
	orderPetIDs []int64
	stock       map[int64]*stockRec
	initial     int
	categoryID  int64
}

type roundCounts struct {
	pets, orders, cancels, completes, stockSets atomic.Int64
	cutOff                                      atomic.Int64 // writers whose last request got no answer
}

func (r *roundCounts) total() int64 {
	return r.pets.Load() + r.orders.Load() + r.cancels.Load() + r.completes.Load() + r.stockSets.Load()
}

// runWriters starts the round's writers; each stops at its first request
// without an answer (the kill) or when ctx ends.
func (m *crashModel) runWriters(ctx context.Context, wg *sync.WaitGroup, c *crashClient, round int) *roundCounts {
	counts := &roundCounts{}
	goWriter := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := f(); err != nil {
					if !errors.Is(err, domaintest.ErrNoAnswer) && ctx.Err() == nil {
						c.t.Error(err)
					}
					counts.cutOff.Add(1)
					return
				}
			}
		}()
	}
	// Pet creators.
	for w := range 2 {
		i := 0
		goWriter(func() error {
			i++
			name := fmt.Sprintf("r%d-w%d-%d", round, w, i)
			var p struct{ ID int64 }
			st, err := c.do(ctx, "POST", "/pets", fmt.Sprintf(`{"name":%q,"categoryId":%d}`, name, m.categoryID), "", &p)
			if err != nil {
				return err
			}
			if st != 201 {
				return fmt.Errorf("POST /pets: %d", st)
			}
			m.mu.Lock()
			m.pets[p.ID] = name
			m.mu.Unlock()
			counts.pets.Add(1)
			return nil
		})
	}
	// Order placers.
	for range 3 {
		goWriter(func() error {
			pet := m.orderPetIDs[rand.IntN(len(m.orderPetIDs))]
			qty := 1 + rand.IntN(3)
			var o struct {
				ID       int64
				PetID    int64
				Quantity int
			}
			st, err := c.do(ctx, "POST", "/store/orders", fmt.Sprintf(`{"petId":%d,"quantity":%d}`, pet, qty), "", &o)
			if err != nil {
				return err
			}
			if st != 201 || o.PetID != pet || o.Quantity != qty {
				return fmt.Errorf("POST /store/orders: %d %+v", st, o)
			}
			m.mu.Lock()
			m.orders[o.ID] = &orderRec{pet: pet, qty: qty}
			m.mu.Unlock()
			counts.orders.Add(1)
			return nil
		})
	}
	// A canceller and a completer, on acknowledged orders that are neither
	// complete nor busy.
	pick := func() (int64, *orderRec) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for id, o := range m.orders { // map order is random enough
			if !o.busy && !o.complete && !o.cancelled && !o.cancelInFlight && !o.completeInFlight {
				o.busy = true
				return id, o
			}
		}
		return 0, nil
	}
	idle := func() error {
		select {
		case <-ctx.Done():
		case <-time.After(time.Millisecond):
		}
		return nil
	}
	// changeOrder sends method with body on a picked order and records the
	// outcome in the fields flags returns: inFlight when no answer came,
	// done when the answer was want.
	changeOrder := func(method, body string, want int, flags func(*orderRec) (inFlight, done *bool), acked *atomic.Int64) func() error {
		return func() error {
			id, o := pick()
			if o == nil {
				return idle()
			}
			st, err := c.do(ctx, method, fmt.Sprintf("/store/orders/%d", id), body, "", nil)
			m.mu.Lock()
			defer m.mu.Unlock()
			o.busy = false
			inFlight, done := flags(o)
			if err != nil {
				*inFlight = true
				return err
			}
			if st != want {
				return fmt.Errorf("%s /store/orders/%d: %d", method, id, st)
			}
			*done = true
			acked.Add(1)
			return nil
		}
	}
	goWriter(changeOrder("DELETE", "", 204,
		func(o *orderRec) (*bool, *bool) { return &o.cancelInFlight, &o.cancelled }, &counts.cancels))
	goWriter(changeOrder("PUT", `{"complete":true}`, 200,
		func(o *orderRec) (*bool, *bool) { return &o.completeInFlight, &o.complete }, &counts.completes))
	// One sequential stock setter per stock pet, so that "the latest
	// acknowledged value, or the one in flight" is the whole truth.
	for id, s := range m.stock {
		goWriter(func() error {
			s.next++
			v := s.next
			st, err := c.do(ctx, "PUT", fmt.Sprintf("/store/inventory/%d", id), fmt.Sprintf(`{"quantity":%d}`, v), "", nil)
			if err != nil {
				m.mu.Lock()
				s.inFlight = &v
				m.mu.Unlock()
				return err
			}
			if st != 200 {
				return fmt.Errorf("PUT /store/inventory/%d: %d", id, st)
			}
			m.mu.Lock()
			s.acked = v
			m.mu.Unlock()
			counts.stockSets.Add(1)
			return nil
		})
	}
	return counts
}

// verify checks the restarted service against the model, then resolves
// what was in flight to what the service holds. It returns a summary and
// the number of acknowledged writes found missing or wrong.
func (m *crashModel) verify(t *testing.T, c *crashClient) (string, int) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	wrong := 0
	errorf := func(format string, args ...any) {
		t.Helper()
		wrong++
		t.Errorf(format, args...)
	}

	// The API key made at the start still authenticates (it is a write too):
	// every call below that writes would fail otherwise; check it directly.
	if st := c.call(context.Background(), "PUT", fmt.Sprintf("/store/inventory/%d", m.orderPetIDs[0]), `{}`, "", nil); st == 401 {
		t.Fatal("the API key acknowledged before the first kill no longer authenticates")
	}

	type pet struct {
		ID   int64
		Name string
	}
	pets := map[int64]string{}
	for _, p := range listAll[pet](c, "/pets?limit=100") {
		pets[p.ID] = p.Name
	}
	for id, name := range m.pets {
		if got, ok := pets[id]; !ok {
			errorf("pet %d (%s) was acknowledged but is gone", id, name)
		} else if got != name {
			errorf("pet %d is named %q, acknowledged as %q", id, got, name)
		}
	}

	type order struct {
		ID       int64
		PetID    int64
		Quantity int
		Complete bool
	}
	orders := map[int64]order{}
	held := map[int64]int{} // per pet: quantity held by its orders
	for _, o := range listAll[order](c, "/store/orders?limit=100") {
		orders[o.ID] = o
		held[o.PetID] += o.Quantity
	}
	unacked := 0
	for id, rec := range m.orders {
		got, exists := orders[id]
		switch {
		case rec.cancelled && exists:
			errorf("order %d was cancelled (acknowledged) but is still there", id)
		case rec.cancelled:
		case !exists && !rec.cancelInFlight:
			errorf("order %d (pet %d, quantity %d) was acknowledged but is gone", id, rec.pet, rec.qty)
		case !exists: // the cancellation in flight went through
			rec.cancelled = true
		case got.PetID != rec.pet || got.Quantity != rec.qty:
			errorf("order %d is %+v, acknowledged as pet %d quantity %d", id, got, rec.pet, rec.qty)
		case rec.complete && !got.Complete:
			errorf("order %d was completed (acknowledged) but is not complete", id)
		default:
			rec.complete = got.Complete // resolves a completion in flight
		}
		rec.cancelInFlight, rec.completeInFlight, rec.busy = false, false, false
	}
	for id, o := range orders {
		if _, ok := m.orders[id]; !ok {
			unacked++ // placed but the answer was lost in the kill: allowed
			m.orders[id] = &orderRec{pet: o.PetID, qty: o.Quantity, complete: o.Complete}
		}
		if !m.orderPets[o.PetID] {
			errorf("order %d is for pet %d, which no writer ordered", id, o.PetID)
		}
	}

	// Stock and orders agree: orders and cancellations are the only changes
	// to these pets' stock, each in one transaction with its order.
	type item struct {
		PetID    int64
		Quantity int
	}
	for _, id := range m.orderPetIDs {
		var it item
		if st := c.call(context.Background(), "GET", fmt.Sprintf("/store/inventory/%d", id), "", "", &it); st != 200 {
			t.Fatalf("GET /store/inventory/%d: %d", id, st)
		}
		if it.Quantity+held[id] != m.initial {
			errorf("pet %d: stock %d + %d held by its orders = %d, want %d", id, it.Quantity, held[id], it.Quantity+held[id], m.initial)
		}
	}
	// Stock set directly: the latest acknowledged value, or the one in flight.
	for id, s := range m.stock {
		var it item
		if st := c.call(context.Background(), "GET", fmt.Sprintf("/store/inventory/%d", id), "", "", &it); st != 200 {
			t.Fatalf("GET /store/inventory/%d: %d", id, st)
		}
		if it.Quantity != s.acked && (s.inFlight == nil || it.Quantity != *s.inFlight) {
			inFlight := "none"
			if s.inFlight != nil {
				inFlight = fmt.Sprint(*s.inFlight)
			}
			errorf("pet %d: stock %d, but %d was acknowledged last (in flight: %s)", id, it.Quantity, s.acked, inFlight)
		}
		s.acked, s.inFlight, s.next = it.Quantity, nil, max(s.next, it.Quantity)
	}
	return fmt.Sprintf("%d pets, %d orders listed, %d of them placed without an answer", len(pets), len(orders), unacked), wrong
}

// TestKillNineLosesNoEvent kills the service with SIGKILL at random moments
// of a write load, with one webhook subscribed to everything, and restarts
// it: every acknowledged write's event reaches the receiver, and
// duplicates share their webhook-id and body. On both stores. On
// PostgreSQL the deliveries a killed process had claimed are sent once
// their lease has run out; so that the test does not wait for the real
// lease, the service there is this test's child (childCommand) with a
// shorter attempt timeout, which the lease follows (eventsTimeout).
func TestKillNineLosesNoEvent(t *testing.T) {
	if isChild() {
		runChild(func() error { eventsTimeout = 3 * time.Second; return nil })
	}
	longParallel(t)
	if testing.Short() {
		t.Skip("builds the binary and kills it several times")
	}
	bin := buildService(t, upgradeOldVersion)
	t.Run("bbolt", func(t *testing.T) {
		built := func(args []string) *exec.Cmd { return exec.Command(bin, args...) }
		killNineEvents(t, built, "--data", filepath.Join(t.TempDir(), "petstore.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		child := func(args []string) *exec.Cmd { return childCommand(t, args) }
		killNineEvents(t, child, "--database", pgtest.URL(t))
	})
}

// killNineEvents runs the test on the service that command starts.
func killNineEvents(t *testing.T, command func(args []string) *exec.Cmd, storeArgs ...string) {
	const adminToken = "crash-test-admin-token-of-32-chars"
	// Lenient: it refuses what comes before it knows the secret, and that
	// comes again.
	rcv := webhooktest.Start(t, webhooktest.Options{Lenient: true})
	args := append([]string{"--rate-limit", "0", "--admin-token", adminToken, "--listen", "127.0.0.1:0", "--webhook-allow-private"}, storeArgs...)
	proc, base := startService(t, command(args))
	c := &crashClient{t: t, base: base, http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
	var hook struct{ Secret string }
	if st := c.call(context.Background(), "POST", "/admin/webhooks", fmt.Sprintf(`{"url":%q,"events":["*"]}`, rcv.URL), "Bearer "+adminToken, &hook); st != 201 {
		t.Fatalf("creating the webhook: %d", st)
	}
	rcv.Trust(hook.Secret)
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
		proc, c.base = startService(t, command(args))
		c.http.CloseIdleConnections()
	}
	defer kill(t, proc)
	mu.Lock()
	n := len(acked)
	mu.Unlock()
	created, read := map[int64]bool{}, 0 // pet.created's ids received
	domaintest.WaitFor(t, 60*time.Second, 50*time.Millisecond, func() error {
		got := rcv.Deliveries()
		for _, d := range got[read:] {
			var p struct{ ID int64 }
			if d.Event.Type == "pet.created" && json.Unmarshal(d.Event.Data, &p) == nil {
				created[p.ID] = true
			}
		}
		read = len(got)
		missing := 0
		for id := range acked {
			if !created[id] {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d acknowledged pets have no pet.created at the receiver", missing, n)
		}
		return nil
	})
	bodies, dups := map[string]string{}, 0 // webhook-id -> body
	for _, d := range rcv.Deliveries() {
		if old, ok := bodies[d.ID]; ok {
			dups++
			if old != d.Body {
				t.Errorf("webhook-id %s came with two bodies:\n%s\n%s", d.ID, old, d.Body)
			}
		}
		bodies[d.ID] = d.Body
	}
	t.Logf("%d acknowledged pets over 3 kills, every pet.created received; %d events in all, %d deliveries repeated (same webhook-id and body)", n, len(bodies), dups)
}
