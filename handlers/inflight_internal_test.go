package handlers

import (
	"testing"

	"petstore/handlers/clientkey"
)

// TestInFlightCaps: a client past its own cap is refused while others are
// served, the total cap holds across clients, and released slots are
// taken again.
func TestInFlightCaps(t *testing.T) {
	f := newInFlight(5, 2)
	a, b, c := clientkey.Of("192.0.2.1:1"), clientkey.Of("192.0.2.2:1"), clientkey.Of("[2001:db8::1]:1")
	for range 2 {
		if why := f.take(a); why != "" {
			t.Fatalf("client a within its cap: %s", why)
		}
	}
	if why := f.take(a); why != "this client is at its limit of requests in flight" {
		t.Fatalf("client a past its cap: %q", why)
	}
	for _, k := range []clientkey.Key{b, b, c} {
		if why := f.take(k); why != "" {
			t.Fatalf("another client: %s", why)
		}
	}
	if why := f.take(clientkey.Of("192.0.2.9:1")); why != "the server is at its limit of requests in flight" {
		t.Fatalf("past the total: %q", why)
	}
	f.release(a)
	if why := f.take(a); why != "" {
		t.Fatalf("after a release: %s", why)
	}
	if len(f.counts) != 3 {
		t.Errorf("%d clients counted, want 3", len(f.counts))
	}
	for _, k := range []clientkey.Key{a, a, b, b, c} {
		f.release(k)
	}
	if f.total != 0 || len(f.counts) != 0 {
		t.Errorf("all released: total %d, %d clients left", f.total, len(f.counts))
	}
}
