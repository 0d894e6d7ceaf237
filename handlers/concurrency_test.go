package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"petstore/store"
)

// TestConcurrentOrdersNeverOversell races 200 clients for a stock of 50
// through the whole HTTP stack: exactly 50 orders succeed, the rest get 409
// insufficient_stock, and the stock ends at 0. Cancelling returns stock.
func TestConcurrentOrdersNeverOversell(t *testing.T) {
	ts := newTestServer(t)
	_, pet := ts.addRex(50)

	const clients = 200
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses = map[int]int{}
		placed   []int64
	)
	body := fmt.Sprintf(`{"petId":%d,"quantity":1}`, pet.ID)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := ts.do("POST", "/store/orders", body)
			mu.Lock()
			defer mu.Unlock()
			statuses[res.status]++
			if res.status == http.StatusCreated {
				var o store.Order
				res.decode(&o)
				placed = append(placed, o.ID)
			}
		}()
	}
	wg.Wait()
	if statuses[201] != 50 || statuses[409] != clients-50 || len(statuses) != 2 {
		t.Fatalf("statuses %v, want 50 x 201 and %d x 409", statuses, clients-50)
	}
	ctx := context.Background()
	inv, err := ts.db.InventoryItem(ctx, pet.ID)
	if err != nil || inv.Quantity != 0 {
		t.Fatalf("stock after the race: %+v, %v", inv, err)
	}
	stored := 0
	for p := (store.OrderFilter{PetID: pet.ID}); ; {
		orders, next, err := ts.db.ListOrders(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range orders {
			stored += o.Quantity
		}
		if next == 0 {
			break
		}
		p.After = next
	}
	if stored != 50 {
		t.Fatalf("stored orders add up to %d units, want 50", stored)
	}

	// Cancelling concurrently returns every unit.
	for _, id := range placed[:20] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts.do("DELETE", fmt.Sprintf("/store/orders/%d", id), "")
		}()
	}
	wg.Wait()
	if inv, _ := ts.db.InventoryItem(ctx, pet.ID); inv.Quantity != 20 {
		t.Fatalf("stock after cancelling 20 orders: %d, want 20", inv.Quantity)
	}
}
