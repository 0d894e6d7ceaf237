package handlers

import (
	"testing"
	"time"
)

// TestObserveAllocatesNothing: once a route, method and status have been
// seen, recording another request of theirs allocates nothing.
func TestObserveAllocatesNothing(t *testing.T) {
	m := newHTTPMetrics(&Server{})
	m.observe("GET", "/pets/:petId", 200, time.Millisecond)
	if n := testing.AllocsPerRun(1000, func() { m.observe("GET", "/pets/:petId", 200, time.Millisecond) }); n != 0 {
		t.Errorf("observe allocates %v times per request", n)
	}
}
