package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"petstore/handlers"
	"petstore/store"
)

// TestConcurrentOrdersNeverOversell races 200 clients for a stock of 50
// through the whole HTTP stack: exactly 50 orders succeed, the rest get 409
// insufficient_stock, and the stock ends at 0. Cancelling returns stock.
func TestConcurrentOrdersNeverOversell(t *testing.T) {
	const clients, stock = 200, 50
	// One client sends all 200 at once: past the per-client cap, 503.
	ts := newTestServer(t, func(c *handlers.Config) { c.MaxClientInFlight = -1 })
	_, pet := ts.addRex(stock)

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses = map[int]int{}
		placed   []int64
	)
	body := fmt.Sprintf(`{"petId":%d,"quantity":1}`, pet.ID)
	for range clients {
		wg.Go(func() {
			res := ts.do("POST", "/store/orders", body)
			mu.Lock()
			defer mu.Unlock()
			statuses[res.status]++
			if res.status == http.StatusCreated {
				var o store.Order
				res.decode(&o)
				placed = append(placed, o.ID)
			}
		})
	}
	wg.Wait()
	if statuses[201] != stock || statuses[409] != clients-stock || len(statuses) != 2 {
		t.Fatalf("statuses %v, want %d x 201 and %d x 409", statuses, stock, clients-stock)
	}
	ctx := context.Background()
	inv, err := ts.db.InventoryItem(ctx, pet.ID)
	if err != nil || inv.Quantity != 0 {
		t.Fatalf("stock after the race: %+v, %v", inv, err)
	}
	if stored := orderedQuantity(t, ts.db, pet.ID); stored != stock {
		t.Fatalf("stored orders add up to %d units, want %d", stored, stock)
	}

	// Cancelling concurrently returns every unit.
	for _, id := range placed[:20] {
		wg.Go(func() { ts.do("DELETE", fmt.Sprintf("/store/orders/%d", id), "") })
	}
	wg.Wait()
	if inv, _ := ts.db.InventoryItem(ctx, pet.ID); inv.Quantity != 20 {
		t.Fatalf("stock after cancelling 20 orders: %d, want 20", inv.Quantity)
	}
}
