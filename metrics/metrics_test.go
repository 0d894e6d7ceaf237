package metrics

import (
	"context"
	"fmt"
	"strings"
	"sync"
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

// TestObserveConcurrentNewSeries: requests of new routes and statuses
// recorded at once, each series first seen by several goroutines, all
// count: none is lost to another's copy of the series map.
func TestObserveConcurrentNewSeries(t *testing.T) {
	m := New()
	const goroutines, routes, statuses = 8, 20, 3
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for r := range routes {
				for s := range statuses {
					m.Observe("GET", fmt.Sprintf("/r%d", r), 200+s, time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	e, err := m.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	if err := e.Write(&buf); err != nil {
		t.Fatal(err)
	}
	for r := range routes {
		for s := range statuses {
			want := fmt.Sprintf(`petstore_http_requests_total{method="GET",route="/r%d",status="%d"} %d`, r, 200+s, goroutines)
			if !strings.Contains(buf.String(), want+"\n") {
				t.Errorf("missing %s", want)
			}
		}
	}
}

// TestBoundedReadsBackToBack: a read that follows one that answered is
// made, never refused as busy. The busy flag was once cleared only after
// the answer, so a scrape right after another could miss the queue.
func TestBoundedReadsBackToBack(t *testing.T) {
	var b bounded
	for i := range 10000 {
		if err := b.read(func(context.Context) error { return nil }); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
	}
}
