package domains_test

import (
	"reflect"
	"testing"
	"time"

	"petstore/domains"
)

func TestBackoff(t *testing.T) {
	added := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var b domains.Backoff
	last, attempts := added, 1
	var waits []time.Duration
	for {
		next, ok := b.NextCheck(added, last, attempts)
		if !ok {
			break
		}
		if !next.After(last) {
			t.Fatalf("next check %v is not after the last %v", next, last)
		}
		waits = append(waits, next.Sub(last))
		last, attempts = next, attempts+1
		if attempts > 1000 {
			t.Fatal("never gives up")
		}
	}
	wantStart := []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour, time.Hour}
	if !reflect.DeepEqual(waits[:len(wantStart)], wantStart) {
		t.Errorf("first waits %v, want %v", waits[:len(wantStart)], wantStart)
	}
	if want := added.Add(48 * time.Hour); !last.Equal(want) {
		t.Errorf("last check at %v, want exactly the 48 h deadline %v", last, want)
	}
	if _, ok := b.NextCheck(added, added.Add(49*time.Hour), 3); ok {
		t.Error("a check after the deadline must not schedule another")
	}
	if next, ok := b.NextCheck(added, time.Time{}, 0); !ok || !next.Equal(added.Add(time.Minute)) {
		t.Errorf("no check yet: got %v, %v; want a minute after adding", next, ok)
	}
	custom := domains.Backoff{Steps: []time.Duration{time.Second}, Every: time.Minute, GiveUpAfter: time.Hour}
	if next, _ := custom.NextCheck(added, added, 5); !next.Equal(added.Add(time.Minute)) {
		t.Errorf("custom backoff: got %v", next)
	}
}
