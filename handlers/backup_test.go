package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/handlers"
	"petstore/store"
	"petstore/store/boltstore"
)

// writeClient sends API writes from goroutines other than the test's, so it
// reports failures as errors instead of failing the test itself.
type writeClient struct {
	base, key string
	c         *http.Client
}

func (w *writeClient) send(method, path, body string, out any) (int, error) {
	req, err := http.NewRequest(method, w.base+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-API-Key", w.key)
	req.Header.Set("Content-Type", "application/json")
	return domaintest.DoJSON(w.c, req, out)
}

// ackedPet is a pet whose creation and stock were both answered 2xx.
type ackedPet struct {
	id    int64
	name  string
	stock int
}

const (
	seedStock = 1_000_000 // stock of the pets created before the load
	newStock  = 7         // stock the writers give the pets they create
)

// TestBackupUnderLoad takes a backup over HTTP while writers create pets and
// place orders, restores it to a file, and checks it: a sound bbolt file,
// every write answered before the backup request is in it, and stock and
// orders agree for every pet, as they must in a consistent copy.
func TestBackupUnderLoad(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()

	var cat store.Category
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201).decode(&cat)
	var seeds []int64
	for i := range 8 {
		var p store.Pet
		ts.do("POST", "/pets", fmt.Sprintf(`{"name":"seed-%d","categoryId":%d}`, i, cat.ID)).wantStatus(201).decode(&p)
		ts.do("PUT", fmt.Sprintf("/store/inventory/%d", p.ID), fmt.Sprintf(`{"quantity":%d}`, seedStock)).wantStatus(200)
		seeds = append(seeds, p.ID)
	}

	client := &writeClient{base: ts.http.URL, key: ts.apiKey,
		c: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 20 * time.Second}}
	defer client.c.CloseIdleConnections()
	var (
		mu     sync.Mutex
		pets   []ackedPet    // answered 2xx, in the order of their answers
		orders []store.Order // likewise
		stop   = make(chan struct{})
		wg     sync.WaitGroup
	)
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	for w := range 3 {
		wg.Go(func() {
			for n := 0; !stopped(); n++ {
				name := fmt.Sprintf("w%d-%d", w, n)
				var p store.Pet
				if st, err := client.send("POST", "/pets", fmt.Sprintf(`{"name":%q,"categoryId":%d}`, name, cat.ID), &p); err != nil || st != 201 {
					t.Errorf("creating a pet: %d %v", st, err)
					return
				}
				if st, err := client.send("PUT", fmt.Sprintf("/store/inventory/%d", p.ID), fmt.Sprintf(`{"quantity":%d}`, newStock), nil); err != nil || st != 200 {
					t.Errorf("stocking pet %d: %d %v", p.ID, st, err)
					return
				}
				mu.Lock()
				pets = append(pets, ackedPet{p.ID, name, newStock})
				mu.Unlock()
			}
		})
	}
	for w := range 3 {
		wg.Go(func() {
			for n := 0; !stopped(); n++ {
				petID := seeds[(w+n)%len(seeds)]
				mu.Lock()
				if n%2 == 1 && len(pets) > 0 {
					petID = pets[(n*7+w)%len(pets)].id // a pet of the load, whose stock runs out
				}
				mu.Unlock()
				var o store.Order
				st, err := client.send("POST", "/store/orders", fmt.Sprintf(`{"petId":%d,"quantity":%d}`, petID, 1+n%3), &o)
				switch {
				case err != nil:
					t.Errorf("placing an order: %v", err)
					return
				case st == 201:
					mu.Lock()
					orders = append(orders, o)
					mu.Unlock()
				case st != 409: // 409: that pet's stock ran out
					t.Errorf("placing an order for pet %d: %d", petID, st)
					return
				}
			}
		})
	}
	counts := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return len(pets), len(orders)
	}
	// The bound only catches writers that stopped (stuck behind the
	// backup): it is generous, because a loaded machine runs them slowly.
	waitFor := func(what string, ok func(p, o int) bool) {
		deadline := time.Now().Add(time.Minute)
		for p, o := counts(); !ok(p, o); p, o = counts() {
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("waiting for %s: %d pets and %d orders acknowledged", what, p, o)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}

	waitFor("the load", func(p, o int) bool { return p >= 30 && o >= 60 })
	// Everything acknowledged so far must be in the backup.
	mu.Lock()
	petsBefore, ordersBefore := slices.Clone(pets), slices.Clone(orders)
	mu.Unlock()
	res := ts.adminDo("GET", "/admin/backup", "").wantStatus(200)
	p0, o0 := counts()
	// The writers keep going after the backup, too.
	waitFor("writes after the backup", func(p, o int) bool { return p >= p0+5 && o >= o0+5 })
	close(stop)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var after store.Pet
	ts.do("POST", "/pets", fmt.Sprintf(`{"name":"after-backup","categoryId":%d}`, cat.ID)).wantStatus(201).decode(&after)
	t.Logf("backup of %d bytes; acknowledged before it: %d pets, %d orders; in all: %d pets, %d orders",
		len(res.body), len(petsBefore), len(ordersBefore), len(pets), len(orders))

	if cl := res.header.Get("Content-Length"); cl != strconv.Itoa(len(res.body)) {
		t.Errorf("Content-Length %q for %d bytes", cl, len(res.body))
	}
	if ct := res.header.Get("Content-Type"); ct != "application/octet-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	if cd := res.header.Get("Content-Disposition"); !regexp.MustCompile(`^attachment; filename="petstore-\d{8}T\d{6}Z\.db"$`).MatchString(cd) {
		t.Errorf("Content-Disposition %q", cd)
	}

	path := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(path, res.body, 0o600); err != nil {
		t.Fatal(err)
	}
	bk, err := boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("opening the backup: %v", err)
	}
	defer bk.Close()
	if err := bk.Check(ctx); err != nil {
		t.Fatalf("the backup is not a sound bbolt file: %v", err)
	}

	for _, p := range petsBefore {
		got, err := bk.Pet(ctx, p.id)
		if err != nil || got.Name != p.name {
			t.Errorf("pet %d (%s), acknowledged before the backup: %+v, %v", p.id, p.name, got, err)
		}
	}
	for _, o := range ordersBefore {
		got, err := bk.Order(ctx, o.ID)
		if err != nil || got.PetID != o.PetID || got.Quantity != o.Quantity {
			t.Errorf("order %d, acknowledged before the backup: %+v, %v; want %+v", o.ID, got, err, o)
		}
	}
	if got, err := bk.Pet(ctx, after.ID); store.ErrorCode(err) != store.ENOTFOUND {
		t.Errorf("a pet created after the backup is in it: %+v, %v", got, err)
	}

	// Stock and orders agree, pet by pet: the stock each was given is what
	// it has plus what its orders took.
	given := map[int64]int{}
	for _, id := range seeds {
		given[id] = seedStock
	}
	stockedBefore := map[int64]bool{}
	for _, p := range petsBefore {
		stockedBefore[p.id] = true
	}
	checkStockAndOrders(t, "backup", bk, given, stockedBefore)

	// The live store holds together too, with every write in it.
	live := map[int64]bool{}
	for _, p := range pets {
		live[p.id] = true
	}
	checkStockAndOrders(t, "live store", ts.db, given, live)
	if n := countOrders(t, ts.db); n != len(orders) {
		t.Errorf("the live store has %d orders, %d were acknowledged", n, len(orders))
	}

	// The backup restores: a server started on it serves its data, with the
	// admin token and the API key it had.
	rs := startOn(t, bk)
	rs.apiKey = ts.apiKey
	var got store.Pet
	rs.do("GET", fmt.Sprintf("/pets/%d", petsBefore[0].id), "").wantStatus(200).decode(&got)
	if got.Name != petsBefore[0].name {
		t.Errorf("restored server: pet %+v, want %s", got, petsBefore[0].name)
	}
	rs.do("GET", fmt.Sprintf("/pets/%d", after.ID), "").wantError(404, "not_found")
	rs.adminDo("GET", "/admin/project", "").wantStatus(200)
	rs.do("POST", "/store/orders", fmt.Sprintf(`{"petId":%d}`, seeds[0])).wantStatus(201)
}

// checkStockAndOrders checks, for every pet in db, that its stock plus the
// quantities of its orders is the stock it was given: given[id] for the
// pets in given, newStock for the other pets in stocked, and for the rest
// newStock or 0 (created, but their stock not yet answered).
func checkStockAndOrders(t *testing.T, what string, db *boltstore.DB, given map[int64]int, stocked map[int64]bool) {
	t.Helper()
	ctx := context.Background()
	seen := 0
	for page := (store.Page{Limit: store.MaxPageSize}); ; {
		pets, next, err := db.ListPets(ctx, store.PetFilter{Page: page})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pets {
			seen++
			inv, err := db.InventoryItem(ctx, p.ID)
			if err != nil {
				t.Errorf("%s: pet %d has no inventory entry: %v", what, p.ID, err)
				continue
			}
			total := inv.Quantity + orderedQuantity(t, db, p.ID)
			want, ok := given[p.ID]
			if !ok {
				want = newStock
				if !stocked[p.ID] && total == 0 {
					continue // created, its stock not set yet
				}
			}
			if total != want {
				t.Errorf("%s: pet %d has %d in stock and %d ordered; it was given %d", what, p.ID, inv.Quantity, total-inv.Quantity, want)
			}
		}
		if next == 0 {
			break
		}
		page.After = next
	}
	if seen < len(given) {
		t.Errorf("%s: %d pets", what, seen)
	}
}

func countOrders(t *testing.T, db *boltstore.DB) int {
	t.Helper()
	n := 0
	for page := (store.Page{Limit: store.MaxPageSize}); ; {
		list, next, err := db.ListOrders(context.Background(), store.OrderFilter{Page: page})
		if err != nil {
			t.Fatal(err)
		}
		n += len(list)
		if next == 0 {
			return n
		}
		page.After = next
	}
}

// startOn starts a server on an open store, as the service does on its data
// file, with the admin token and API key of the test servers.
func startOn(t *testing.T, db *boltstore.DB) *testServer {
	t.Helper()
	specs(t)
	srv, err := handlers.New(serverConfig(t, db, func(c *handlers.Config) {
		c.Now = func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }
	}))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &testServer{tb: t, db: db, srv: srv, http: hs, admin: domaintest.AdminToken}
}

// TestBackupRestoresThroughTheService restores the way the README says: a
// backup of a running service replaces the data file of a stopped one, which
// then starts on it.
func TestBackupRestoresThroughTheService(t *testing.T) {
	ts := newTestServer(t)
	var cat store.Category
	var rex store.Pet
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201).decode(&cat)
	ts.do("POST", "/pets", fmt.Sprintf(`{"name":"Rex","categoryId":%d}`, cat.ID)).wantStatus(201).decode(&rex)

	head := ts.adminDo("HEAD", "/admin/backup", "").wantStatus(200)
	body := ts.adminDo("GET", "/admin/backup", "").wantStatus(200).body
	if len(head.body) != 0 || head.header.Get("Content-Length") != strconv.Itoa(len(body)) {
		t.Errorf("HEAD: Content-Length %q and %d bytes of body; GET sent %d bytes", head.header.Get("Content-Length"), len(head.body), len(body))
	}

	// A second service with its own data file, then stopped: the file the
	// backup replaces.
	path := filepath.Join(t.TempDir(), "petstore.db")
	other, err := boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := store.Category{Name: "old data"}
	if err := other.CreateCategory(context.Background(), &c); err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	restored, err := boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	rs := startOn(t, restored)
	var got store.Pet
	rs.do("GET", fmt.Sprintf("/pets/%d", rex.ID), "").wantStatus(200).decode(&got)
	if got != rex {
		t.Errorf("restored pet %+v, want %+v", got, rex)
	}
	var cats []store.Category
	rs.do("GET", "/categories", "").wantStatus(200).decode(&cats)
	if len(cats) != 1 || cats[0].Name != "dogs" {
		t.Errorf("restored categories %+v, want only dogs", cats)
	}
}

func TestBackupNeedsTheAdminToken(t *testing.T) {
	ts := newTestServer(t)
	for _, h := range []http.Header{{}, {"Authorization": {"Bearer nope"}}, {"X-Api-Key": {ts.apiKey}}} {
		ts.send("GET", "/admin/backup", "", h).wantError(401, "unauthorized")
	}
}

// TestBackupOfAClosedStore: a failure before the first byte is an Error
// answer, not a broken download.
func TestBackupOfAClosedStore(t *testing.T) {
	ts := newTestServer(t)
	if err := ts.db.Close(); err != nil {
		t.Fatal(err)
	}
	ts.adminDo("GET", "/admin/backup", "").wantError(500, "internal")
}
