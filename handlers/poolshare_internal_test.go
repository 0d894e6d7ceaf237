package handlers

import "testing"

// TestPoolShareOf: a route's share of the database connections is its
// resource, so that the routes of one table share one bound.
func TestPoolShareOf(t *testing.T) {
	for path, want := range map[string]string{
		"/pets":                   "/pets",
		"/pets/:petId":            "/pets",
		"/categories/:categoryId": "/categories",
		"/store/orders":           "/store/orders",
		"/store/orders/:orderId":  "/store/orders",
		"/store/inventory/:petId": "/store/inventory",
		"/admin/webhooks/:id/deliveries/:deliveryId/retry": "/admin/webhooks",
		"/events": "/events",
	} {
		if got := poolShareOf(path); got != want {
			t.Errorf("poolShareOf(%q) = %q, want %q", path, got, want)
		}
	}
}
