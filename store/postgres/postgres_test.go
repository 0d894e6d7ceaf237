package postgres_test

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/store"
	"petstore/store/postgres"
	"petstore/store/postgres/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

func open(t *testing.T) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), pgtest.URL(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOrdersNeverOversell(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	c := store.Category{Name: "dogs"}
	if err := db.CreateCategory(ctx, &c); err != nil {
		t.Fatal(err)
	}
	p := store.Pet{Name: "Rex", CategoryID: c.ID}
	if err := db.CreatePet(ctx, &p); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetStock(ctx, p.ID, 50); err != nil {
		t.Fatal(err)
	}
	var placed, refused atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			err := db.PlaceOrder(ctx, &store.Order{PetID: p.ID, Quantity: 1})
			switch store.ErrorCode(err) {
			case "":
				placed.Add(1)
			case store.EINSUFFICIENTSTOCK:
				refused.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	it, err := db.InventoryItem(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if placed.Load() != 50 || refused.Load() != 150 || it.Quantity != 0 {
		t.Errorf("placed %d, refused %d, stock left %d", placed.Load(), refused.Load(), it.Quantity)
	}
}

// Two instances on one database: a key revoked through one is refused by
// the other within a second, and a change of the admin token reaches it.
func TestChangesReachOtherInstances(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	a, err := postgres.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := postgres.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	changed := make(chan struct{}, 10)
	b.OnChange(func() { changed <- struct{}{} })

	token, err := a.EnsureAdminToken(ctx, "")
	if err != nil || token == "" {
		t.Fatalf("first token %q, %v", token, err)
	}
	if again, err := b.EnsureAdminToken(ctx, ""); err != nil || again != "" {
		t.Fatalf("second instance's start: %q, %v", again, err)
	}
	key, secret, err := a.CreateAPIKey(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, func() bool { _, ok := b.AuthenticateAPIKey(secret); return ok })
	if err := a.RevokeAPIKey(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, func() bool { _, ok := b.AuthenticateAPIKey(secret); return !ok })
	const next = "pat_replaced-by-the-operator-0123456789"
	if _, err := a.EnsureAdminToken(ctx, next); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, func() bool { return b.CheckAdminToken(next) && !b.CheckAdminToken(token) })
}

// waitFor waits for cond, re-checking after each change notification, for
// at most a second.
func waitFor(t *testing.T, changed <-chan struct{}, cond func() bool) {
	t.Helper()
	deadline := time.After(time.Second)
	for !cond() {
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("the other instance did not see the change within a second")
		}
	}
}
