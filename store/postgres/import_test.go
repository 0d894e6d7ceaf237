package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
	"petstore/store/storetest"
)

// fillBolt writes every kind of thing a bbolt file holds, with gaps in the
// id sequences (deleted records), and returns the secrets it was given.
func fillBolt(t *testing.T, ctx context.Context, db *boltstore.DB) (adminToken, liveKey, revokedKey string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// A webhook made first gets every event that follows; the first writes'
	// deliveries are made before the move, the rest after it.
	hook := store.Webhook{URL: "https://hooks.example.com/in", Events: []string{"*"}, Enabled: true, Description: "all", Secret: "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"}
	must(db.CreateWebhook(ctx, &hook, nil))
	dogs, gone, cats := store.Category{Name: "dogs", Description: "barks"}, store.Category{Name: "gone"}, store.Category{Name: "cats"}
	for _, c := range []*store.Category{&dogs, &gone, &cats} {
		must(db.CreateCategory(ctx, c, nil))
	}
	must(db.DeleteCategory(ctx, gone.ID, store.Condition{}))
	if n, err := db.FanOut(ctx, time.Now(), 100); err != nil || n == 0 {
		t.Fatalf("fan-out before the move: %d events, %v", n, err)
	}
	// A write made with an Idempotency-Key keeps its answer.
	keyed := &store.IdempotentWrite{Scope: "key:1", Key: "create-birds", Fingerprint: []byte("POST /categories {}"), TTL: 24 * time.Hour}
	must(db.CreateCategory(ctx, &store.Category{Name: "birds"}, keyed))
	rex, tom, ghost := store.Pet{Name: "Rex", CategoryID: dogs.ID}, store.Pet{Name: "Tom \"the cat\" ✓", CategoryID: cats.ID, Status: store.StatusPending}, store.Pet{Name: "Ghost", CategoryID: dogs.ID}
	for _, p := range []*store.Pet{&rex, &tom, &ghost} {
		must(db.CreatePet(ctx, p, nil))
	}
	_, err := db.SetStock(ctx, rex.ID, 40, store.Condition{})
	must(err)
	_, err = db.SetStock(ctx, tom.ID, 7, store.Condition{})
	must(err)
	ship := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	o1, o2, o3 := store.Order{PetID: rex.ID, Quantity: 3, ShipDate: &ship}, store.Order{PetID: tom.ID, Quantity: 2}, store.Order{PetID: rex.ID}
	for _, o := range []*store.Order{&o1, &o2, &o3} {
		must(db.PlaceOrder(ctx, o, nil))
	}
	done := true
	_, err = db.UpdateOrder(ctx, o2.ID, store.OrderUpdate{Complete: &done}, store.Condition{})
	must(err)
	must(db.CancelOrder(ctx, o3.ID, store.Condition{}))
	must(db.DeletePet(ctx, ghost.ID, store.Condition{}))

	adminToken, err = db.EnsureAdminToken(ctx, "")
	must(err)
	_, liveKey, err = db.CreateAPIKey(ctx, "ci", nil)
	must(err)
	revoked, revokedKey, err := db.CreateAPIKey(ctx, "old laptop", nil)
	must(err)
	must(db.RevokeAPIKey(ctx, revoked.ID))

	_, err = db.UpdateProject(ctx, func(p *store.Project) error { p.Name, p.Slug, p.Plan = "Shop", "shop", store.PlanPro; return nil })
	must(err)
	for _, v := range []string{"v1", "v2"} {
		_, err = db.RecordDeploy(ctx, store.Deploy{Version: v, SpecSHA256: "abc", Status: "published"})
		must(err)
	}
	verified := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, d := range []store.Domain{
		{Name: "shop.example.com", State: store.DomainVerified, AddedAt: verified.Add(-time.Hour), VerifiedAt: &verified,
			Records:     []store.DNSRecord{{Type: "CNAME", Host: "shop", Name: "shop.example.com", Value: "shop.petstore.test", TTL: 300}},
			Certificate: store.Certificate{State: store.CertIssued, Issuer: "Pebble", Names: []string{"shop.example.com"}, NotAfter: &verified}},
		{Name: "old.example.com", State: store.DomainPending, AddedAt: verified},
	} {
		must(db.AddDomain(ctx, &d, nil))
	}
	_, err = db.UpdateSettings(ctx, func(s *store.Settings, _ map[string]store.Domain) error {
		s.Domains.Primary = "shop.example.com"
		s.Domains.Redirects = []store.Redirect{{From: "old.example.com", To: "shop.example.com", Status: 301}}
		return nil
	})
	must(err)
	for key, value := range map[string]string{
		"certificates/acme-v02.api.letsencrypt.org-directory/shop.example.com/shop.example.com.crt":  "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
		"certificates/acme-v02.api.letsencrypt.org-directory/shop.example.com/shop.example.com.key":  "-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----\n",
		"certificates/acme-v02.api.letsencrypt.org-directory/shop.example.com/shop.example.com.json": `{"sans":["shop.example.com"]}`,
		"acme/acme-v02.api.letsencrypt.org-directory/users/default/default.key":                      "\x00\x01binary\xff",
	} {
		must(db.KVPut(ctx, key, []byte(value)))
	}
	return adminToken, liveKey, revokedKey
}

// The move copies every entity, credential, domain, setting and
// certificate with its id, and PostgreSQL then answers what the file did.
func TestImportFromBolt(t *testing.T) {
	ctx := context.Background()
	bolt := domaintest.OpenStore(t)
	adminToken, liveKey, revokedKey := fillBolt(t, ctx, bolt)

	url := pgtest.URL(t)
	target, err := postgres.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := target.Import(ctx, bolt); err != nil {
		t.Fatal(err)
	}
	// A second move into the same database is refused, and changes nothing.
	err = target.Import(ctx, bolt)
	if store.ErrorCode(err) != store.ECONFLICT || !strings.Contains(store.ErrorMessage(err), "the target database is not empty") {
		t.Errorf("a second move: %v", err)
	}
	target.Close()
	// A move into a database that another one is copying into names it.
	other := pgtest.URL(t)
	session := pgtest.Connect(t, other)
	if err := session.Exec(ctx, fmt.Sprintf("SELECT pg_advisory_lock(%d)", postgres.ImportLock)); err != nil {
		t.Fatal(err)
	}
	racing, err := postgres.Open(ctx, other, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = racing.Import(ctx, bolt)
	racing.Close()
	if store.ErrorCode(err) != store.ECONFLICT || !strings.Contains(store.ErrorMessage(err), "another move is copying into the database") {
		t.Errorf("a move beside another: %v", err)
	}

	// A fresh connection sees what the file holds.
	pg, err := postgres.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	want, err := storetest.Collect(ctx, bolt)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Pets) != 2 || len(want.KV) != 4 || len(want.APIKeys) != 1 {
		t.Errorf("the file holds %d pets, %d keys of the key/value space, %d API keys", len(want.Pets), len(want.KV), len(want.APIKeys))
	}
	if len(want.Webhooks) != 1 || len(want.Events) < 10 || len(want.Deliveries) == 0 || len(want.Answers) != 1 || want.Dispatched.IsZero() {
		t.Errorf("the file holds %d webhooks, %d events, %d deliveries, %d kept answers, fan-out at %v",
			len(want.Webhooks), len(want.Events), len(want.Deliveries), len(want.Answers), want.Dispatched)
	}
	got, err := storetest.Collect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	storetest.SameSnapshot(t, want, got)
	// The webhook signs with its own secret, and the fan-out goes on from
	// where the file's had come: each event gets one delivery, none two.
	if w, err := pg.Webhook(ctx, want.Webhooks[0].ID); err != nil || w.Secret != want.Webhooks[0].Secret || w.Secret == "" {
		t.Errorf("the webhook on PostgreSQL: %+v %v", w, err)
	}
	if n, err := pg.FanOut(ctx, time.Now(), 1000); err != nil || n != len(want.Events)-len(want.Deliveries) {
		t.Errorf("fan-out after the move: %d events, %v; want %d (those after the file's fan-out)", n, err, len(want.Events)-len(want.Deliveries))
	}
	ds, _, err := pg.Deliveries(ctx, want.Webhooks[0].ID, store.Page{Limit: store.MaxPageSize})
	if err != nil || len(ds) != len(want.Events) {
		t.Errorf("deliveries after the move's fan-out: %d, %v; want one per event, %d", len(ds), err, len(want.Events))
	}
	seen := map[store.EventID]bool{}
	for _, d := range ds {
		if seen[d.EventID] {
			t.Errorf("event %v delivered twice", d.EventID)
		}
		seen[d.EventID] = true
	}
	// And through the store's own reads.
	listed := exportPostgres(t, ctx, pg)
	for name, pair := range map[string][2]any{
		"categories": {want.Categories, listed.Categories},
		"pets":       {want.Pets, listed.Pets},
		"orders":     {want.Orders, listed.Orders},
		"API keys":   {publicKeys(want.APIKeys), listed.APIKeys},
		"domains":    {want.Domains, listed.Domains},
	} {
		w, _ := json.Marshal(pair[0])
		g, _ := json.Marshal(pair[1])
		if string(w) != string(g) {
			t.Errorf("%s:\n got %s\nwant %s", name, g, w)
		}
	}
	if !pg.CheckAdminToken(adminToken) {
		t.Error("the admin token does not check on PostgreSQL")
	}
	if k, ok := pg.AuthenticateAPIKey(liveKey); !ok || k.Name != "ci" {
		t.Errorf("the API key: %+v %v", k, ok)
	}
	if _, ok := pg.AuthenticateAPIKey(revokedKey); ok {
		t.Error("a key revoked before the move authenticates")
	}
	// New ids continue after the ones the file gave, deleted ones included.
	c := store.Category{Name: "birds"}
	p := store.Pet{Name: "Tweety", CategoryID: want.Categories[0].ID}
	o := store.Order{PetID: want.Pets[0].ID}
	if err := pg.CreateCategory(ctx, &c, nil); err != nil || c.ID != want.LastIDs.Categories+1 {
		t.Errorf("a new category: id %d %v, want %d", c.ID, err, want.LastIDs.Categories+1)
	}
	if err := pg.CreatePet(ctx, &p, nil); err != nil || p.ID != want.LastIDs.Pets+1 {
		t.Errorf("a new pet: id %d %v, want %d", p.ID, err, want.LastIDs.Pets+1)
	}
	if err := pg.PlaceOrder(ctx, &o, nil); err != nil || o.ID != want.LastIDs.Orders+1 {
		t.Errorf("a new order: id %d %v, want %d", o.ID, err, want.LastIDs.Orders+1)
	}
	if k, _, err := pg.CreateAPIKey(ctx, "new", nil); err != nil || k.ID != want.LastIDs.APIKeys+1 {
		t.Errorf("a new API key: id %d %v, want %d", k.ID, err, want.LastIDs.APIKeys+1)
	}
	if d, err := pg.RecordDeploy(ctx, store.Deploy{Version: "v3"}); err != nil || d.ID != want.LastIDs.Deploys+1 {
		t.Errorf("a new deploy: id %d %v, want %d", d.ID, err, want.LastIDs.Deploys+1)
	}
}

func publicKeys(keys []store.StoredAPIKey) []store.APIKey {
	out := []store.APIKey{}
	for _, k := range keys {
		out = append(out, k.APIKey)
	}
	return out
}

// exportPostgres reads back through the store's own API what Import wrote.
func exportPostgres(t *testing.T, ctx context.Context, pg *postgres.DB) (s struct {
	Categories []store.Category
	Pets       []store.Pet
	Inventory  []store.InventoryItem
	Orders     []store.Order
	APIKeys    []store.APIKey
	Project    store.Project
	Domains    []store.Domain
	Settings   store.Settings
	KV         []store.KVEntry
}) {
	t.Helper()
	var err error
	page := store.Page{Limit: store.MaxPageSize}
	check := func(e error) {
		t.Helper()
		if e != nil {
			t.Fatal(e)
		}
	}
	s.Categories, _, err = pg.ListCategories(ctx, page)
	check(err)
	s.Pets, _, err = pg.ListPets(ctx, store.PetFilter{Page: page})
	check(err)
	s.Inventory, _, err = pg.ListInventory(ctx, store.InventoryFilter{Page: page})
	check(err)
	s.Orders, _, err = pg.ListOrders(ctx, store.OrderFilter{Page: page})
	check(err)
	s.APIKeys, _, err = pg.APIKeys(ctx, page)
	check(err)
	s.Project, err = pg.Project(ctx)
	check(err)
	s.Domains, err = pg.Domains(ctx)
	check(err)
	s.Settings, err = pg.Settings(ctx)
	check(err)
	keys, err := pg.KVKeys(ctx, "")
	check(err)
	for _, k := range keys {
		v, err := pg.KVGet(ctx, k)
		check(err)
		info, err := pg.KVStat(ctx, k)
		check(err)
		s.KV = append(s.KV, store.KVEntry{Key: k, Value: v, Modified: info.Modified.UTC()})
	}
	return s
}

// TestRoundTripBoltPostgresBolt: a file moved to PostgreSQL and back to a
// new file holds what it held (every record, version, credential hash,
// sequence, webhook secret, event, delivery and kept answer), answers the
// same, and gives the same deliveries to attempt, each with its event and
// its webhook's secret.
func TestRoundTripBoltPostgresBolt(t *testing.T) {
	ctx := context.Background()
	bolt := domaintest.OpenStore(t)
	adminToken, liveKey, _ := fillBolt(t, ctx, bolt)
	if _, err := bolt.FanOut(ctx, time.Now(), 1000); err != nil {
		t.Fatal(err)
	}
	pg, err := postgres.Open(ctx, pgtest.URL(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if err := pg.Import(ctx, bolt); err != nil {
		t.Fatal(err)
	}
	back := domaintest.OpenStore(t)
	if err := back.Import(ctx, pg); err != nil {
		t.Fatal(err)
	}
	if err := back.Import(ctx, pg); store.ErrorCode(err) != store.ECONFLICT {
		t.Errorf("a second move into the same file: %v", err)
	}
	want, err := storetest.Collect(ctx, bolt)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]store.Streamer{"PostgreSQL": pg, "the file back": back} {
		got, err := storetest.Collect(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) { storetest.SameSnapshot(t, want, got) })
	}
	if !back.CheckAdminToken(adminToken) {
		t.Error("the admin token does not check on the file back")
	}
	if k, ok := back.AuthenticateAPIKey(liveKey); !ok || k.Name != "ci" {
		t.Errorf("the API key on the file back: %+v %v", k, ok)
	}
	// The same answers through the stores' reads.
	page := store.Page{Limit: store.MaxPageSize}
	for _, read := range []func(s interface {
		ListPets(context.Context, store.PetFilter) ([]store.Pet, int64, error)
		ListOrders(context.Context, store.OrderFilter) ([]store.Order, int64, error)
		Events(context.Context, store.EventFilter) ([]store.Event, error)
		Webhooks(context.Context, store.Page) ([]store.Webhook, int64, error)
	}) (any, error){
		func(s interface {
			ListPets(context.Context, store.PetFilter) ([]store.Pet, int64, error)
			ListOrders(context.Context, store.OrderFilter) ([]store.Order, int64, error)
			Events(context.Context, store.EventFilter) ([]store.Event, error)
			Webhooks(context.Context, store.Page) ([]store.Webhook, int64, error)
		}) (any, error) {
			pets, _, err := s.ListPets(ctx, store.PetFilter{Status: store.StatusPending, Page: page})
			orders, _, err2 := s.ListOrders(ctx, store.OrderFilter{Page: page})
			events, err3 := s.Events(ctx, store.EventFilter{Kinds: []string{"pet"}})
			hooks, _, err4 := s.Webhooks(ctx, page)
			for i := range events {
				events[i].CreatedAt = events[i].CreatedAt.Truncate(time.Microsecond)
			}
			return []any{pets, orders, events, hooks}, errors.Join(err, err2, err3, err4)
		},
	} {
		w, err := read(bolt)
		if err != nil {
			t.Fatal(err)
		}
		g, err := read(back)
		if err != nil {
			t.Fatal(err)
		}
		wj, _ := json.Marshal(w)
		gj, _ := json.Marshal(g)
		if string(wj) != string(gj) {
			t.Errorf("the file back answers\n%s\nwant\n%s", gj, wj)
		}
	}
	// The same deliveries to attempt, from each store.
	claims := func(s interface {
		ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, busy []int64, limit int) ([]store.Claimed, error)
	}) string {
		now := time.Now().Add(time.Minute)
		c, err := s.ClaimDeliveries(ctx, now, time.Minute, nil, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range c {
			out = append(out, fmt.Sprintf("%d %d %s %s %s %s", d.ID, d.WebhookID, d.EventID, d.Event.Type, d.Event.Data, d.Webhook.Secret))
		}
		if len(out) == 0 {
			t.Error("no delivery to attempt")
		}
		slices.Sort(out) // in due order; the same time, any order
		return strings.Join(out, "\n")
	}
	wantClaims := claims(bolt)
	for name, s := range map[string]interface {
		ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, busy []int64, limit int) ([]store.Claimed, error)
	}{"PostgreSQL": pg, "the file back": back} {
		if got := claims(s); got != wantClaims {
			t.Errorf("%s gives the deliveries\n%s\nwant\n%s", name, got, wantClaims)
		}
	}
}

// TestMovesCarryTheVersionFloor: a file put back from a backup gives a
// record written afterwards a version above every one given before (its
// floor). Moved to PostgreSQL and back to a file, the record's next
// versions are still above them: a move that left the floor behind gave
// out again an ETag acknowledged for a state the put-back took back.
func TestMovesCarryTheVersionFloor(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path, backup := filepath.Join(dir, "petstore.db"), filepath.Join(dir, "backup.db")
	file, err := boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat := store.Category{Name: "dogs"}
	p := store.Pet{Name: "Rex", Status: "available"}
	if err := file.CreateCategory(ctx, &cat, nil); err != nil {
		t.Fatal(err)
	}
	p.CategoryID = cat.ID
	if err := file.CreatePet(ctx, &p, nil); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(backup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := file.Backup(ctx, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	acked := map[int64]string{}
	type replacer interface {
		ReplacePet(context.Context, *store.Pet, store.Condition) error
	}
	replace := func(db replacer, name string) int64 {
		t.Helper()
		q := store.Pet{ID: p.ID, Name: name, CategoryID: cat.ID, Status: "available"}
		if err := db.ReplacePet(ctx, &q, store.Condition{}); err != nil {
			t.Fatal(err)
		}
		return q.Version
	}
	for _, name := range []string{"Rex B", "Rex C"} {
		acked[replace(file, name)] = name
	}
	file.Close()
	if err := os.Rename(backup, path); err != nil {
		t.Fatal(err)
	}
	if file, err = boltstore.Open(path, store.Options{}); err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	pg, err := postgres.Open(ctx, pgtest.URL(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if err := pg.Import(ctx, file); err != nil {
		t.Fatal(err)
	}
	back := domaintest.OpenStore(t)
	if err := back.Import(ctx, pg); err != nil {
		t.Fatal(err)
	}
	for name, db := range map[string]replacer{"the database": pg, "the file moved back": back} {
		if v := replace(db, "Rex D"); acked[v] != "" {
			t.Errorf("in %s, the pet got version %d, acknowledged before the put-back for %s", name, v, acked[v])
		}
	}
}
