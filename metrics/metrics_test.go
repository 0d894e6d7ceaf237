package metrics

import (
	"testing"
	"time"
)

// TestObserveAllocatesNothing: once a route, method and status have been
// seen, recording another request of theirs allocates nothing.
func TestObserveAllocatesNothing(t *testing.T) {
	m := New()
	m.Observe("GET", "/pets/:petId", 200, time.Millisecond)
	if n := testing.AllocsPerRun(1000, func() { m.Observe("GET", "/pets/:petId", 200, time.Millisecond) }); n != 0 {
		t.Errorf("Observe allocates %v times per request", n)
	}
}
