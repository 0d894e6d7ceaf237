package boltstore_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/boltstore"
)

var ctx = context.Background()

func mustOpenPath(tb testing.TB, path string) *boltstore.DB {
	tb.Helper()
	return domaintest.OpenStoreFile(tb, path, store.Options{})
}

// mustOpenAt opens a store on a fresh file whose clock stands at now.
func mustOpenAt(tb testing.TB, now time.Time) *boltstore.DB {
	tb.Helper()
	return domaintest.OpenStoreFile(tb, filepath.Join(tb.TempDir(), "petstore.db"), store.Options{Now: func() time.Time { return now }})
}

// mustReopen closes db and opens its file again, as a restart does.
func mustReopen(tb testing.TB, db *boltstore.DB) *boltstore.DB {
	tb.Helper()
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	return mustOpenPath(tb, db.Path())
}

// assertError fails unless err is the application error code with exactly msg.
func assertError(tb testing.TB, err error, code, msg string) {
	tb.Helper()
	if got := store.ErrorCode(err); got != code {
		tb.Fatalf("error %v: code %q, want %q", err, got, code)
	}
	if got := store.ErrorMessage(err); got != msg {
		tb.Fatalf("error message %q, want %q", got, msg)
	}
}

func mustCategory(tb testing.TB, db *boltstore.DB, name string) store.Category {
	tb.Helper()
	c := store.Category{Name: name}
	if err := db.CreateCategory(ctx, &c, nil); err != nil {
		tb.Fatal(err)
	}
	return c
}

func mustPet(tb testing.TB, db *boltstore.DB, name string, categoryID int64, status store.PetStatus) store.Pet {
	tb.Helper()
	p := store.Pet{Name: name, CategoryID: categoryID, Status: status}
	if err := db.CreatePet(ctx, &p, nil); err != nil {
		tb.Fatal(err)
	}
	return p
}

// mustDog creates the category "dogs" and the pet "Rex" in it, of the
// given status.
func mustDog(tb testing.TB, db *boltstore.DB, status store.PetStatus) store.Pet {
	tb.Helper()
	return mustPet(tb, db, "Rex", mustCategory(tb, db, "dogs").ID, status)
}

// mustStockedDog is mustDog with quantity in stock.
func mustStockedDog(tb testing.TB, db *boltstore.DB, status store.PetStatus, quantity int) store.Pet {
	tb.Helper()
	p := mustDog(tb, db, status)
	mustStock(tb, db, p.ID, quantity)
	return p
}

// mustOrder places o and returns it as placed.
func mustOrder(tb testing.TB, db *boltstore.DB, o store.Order) store.Order {
	tb.Helper()
	if err := db.PlaceOrder(ctx, &o, nil); err != nil {
		tb.Fatal(err)
	}
	return o
}

func mustStock(tb testing.TB, db *boltstore.DB, petID int64, qty int) {
	tb.Helper()
	if _, err := db.SetStock(ctx, petID, qty, store.Condition{}); err != nil {
		tb.Fatal(err)
	}
}

func TestOpen_SecondOpenerFails(t *testing.T) {
	db := domaintest.OpenStore(t)
	start := time.Now()
	if db2, err := boltstore.Open(db.Path(), store.Options{}); err == nil {
		db2.Close()
		t.Fatal("a second Open of a file in use succeeded")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("second Open gave up after %v, want about 1s", d)
	}
}

func TestPing(t *testing.T) {
	db := domaintest.OpenStore(t)
	if err := db.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := db.Ping(cancelled); err == nil {
		t.Fatal("Ping with a cancelled context succeeded")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(ctx); err == nil {
		t.Fatal("Ping on a closed store succeeded")
	}
}

func TestReopen_KeepsEverything(t *testing.T) {
	db := domaintest.OpenStore(t)
	c := mustCategory(t, db, "dogs")
	p := mustPet(t, db, "Rex", c.ID, store.StatusPending)
	mustStock(t, db, p.ID, 7)
	o := mustOrder(t, db, store.Order{PetID: p.ID, Quantity: 2})
	key, secret, err := db.CreateAPIKey(ctx, "ci", nil)
	if err != nil {
		t.Fatal(err)
	}
	token, err := db.EnsureAdminToken(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.UpdateProject(ctx, func(p *store.Project) error { p.Plan = store.PlanPro; return nil }); err != nil {
		t.Fatal(err)
	}
	dep, err := db.RecordDeploy(ctx, store.Deploy{Version: "1.0.0", Status: "succeeded"})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.KVPut(ctx, "certificates/ca/example.com/example.com.crt", []byte("PEM")); err != nil {
		t.Fatal(err)
	}

	db = mustReopen(t, db)

	if got, err := db.Pet(ctx, p.ID); err != nil || got != p {
		t.Fatalf("pet after restart: %+v, %v; want %+v", got, err, p)
	}
	if got, err := db.Category(ctx, c.ID); err != nil || got != c {
		t.Fatalf("category after restart: %+v, %v; want %+v", got, err, c)
	}
	if got, err := db.InventoryItem(ctx, p.ID); err != nil || got.Quantity != 5 || got.Status != store.StatusPending {
		t.Fatalf("inventory after restart: %+v, %v", got, err)
	}
	if got, err := db.Order(ctx, o.ID); err != nil || got.Quantity != 2 || got.PetID != p.ID {
		t.Fatalf("order after restart: %+v, %v", got, err)
	}
	if got, ok := db.AuthenticateAPIKey(secret); !ok || got != key {
		t.Fatalf("api key after restart: %+v, %v; want %+v", got, ok, key)
	}
	if !db.CheckAdminToken(token) {
		t.Fatal("admin token does not check after restart")
	}
	if again, err := db.EnsureAdminToken(ctx, ""); err != nil || again != "" {
		t.Fatalf("EnsureAdminToken after restart generated %q, %v; want the stored one kept", again, err)
	}
	proj, err := db.Project(ctx)
	if err != nil || proj.Plan != store.PlanPro || len(proj.Deploys) != 1 || proj.Deploys[0] != dep {
		t.Fatalf("project after restart: %+v, %v", proj, err)
	}
	if got, err := db.KVGet(ctx, "certificates/ca/example.com/example.com.crt"); err != nil || string(got) != "PEM" {
		t.Fatalf("certificate after restart: %q, %v", got, err)
	}
	// New ids continue after the old ones.
	p2 := mustPet(t, db, "Max", c.ID, "")
	if p2.ID <= p.ID {
		t.Fatalf("new pet id %d after restart, want > %d", p2.ID, p.ID)
	}
}

func TestDataFile_HoldsNoSecrets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "petstore.db")
	db, err := boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var secrets []string
	for _, name := range []string{"one", "two", "three"} {
		_, secret, err := db.CreateAPIKey(ctx, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, secret)
	}
	token, err := db.EnsureAdminToken(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	given := "operator-chosen-admin-token-0123456789"
	if _, err := db.EnsureAdminToken(ctx, given); err != nil {
		t.Fatal(err)
	}
	if !db.CheckAdminToken(given) || db.CheckAdminToken(token) {
		t.Fatal("a given admin token did not replace the generated one")
	}
	secrets = append(secrets, token, given)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		// The random part alone, so that a store that dropped the psk_/pat_
		// prefix would be caught too.
		body := s[strings.IndexByte(s, '_')+1:]
		if bytes.Contains(data, []byte(body)) {
			t.Errorf("the data file contains the secret %q", s)
		}
	}
	// The check above can only fail if the file has readable content at all.
	if !bytes.Contains(data, []byte(`"name":"three"`)) {
		t.Fatal("the data file does not hold the keys' JSON: the scan above proves nothing")
	}
}
