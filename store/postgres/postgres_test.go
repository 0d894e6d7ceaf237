package postgres_test

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"

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
