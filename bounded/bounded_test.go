package bounded_test

import (
	"errors"
	"testing"

	"petstore/bounded"
)

// The rule the package states: full, a Cache evicts the least recently
// used entry; Get and Add use one, Peek, Contains and GetOldest do not.
func TestEvictsTheLeastRecentlyUsed(t *testing.T) {
	var evicted []int
	c := bounded.New(3, func(k int, _ string) { evicted = append(evicted, k) })
	c.Add(1, "a")
	c.Add(2, "b")
	c.Add(3, "c")
	c.Get(1)      // 2 is now the least recently used
	c.Peek(2)     // not a use
	c.Contains(2) // not a use
	c.GetOldest() // not a use
	c.Add(4, "d")
	c.Add(1, "a") // a use: 3 is next
	c.Add(5, "e")
	if len(evicted) != 2 || evicted[0] != 2 || evicted[1] != 3 {
		t.Errorf("evicted %v, want [2 3]", evicted)
	}
	if c.Len() != 3 {
		t.Errorf("%d entries, want 3", c.Len())
	}
}

func TestNewRefusesASizeBelowOne(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("bounded.New(0, nil) did not panic")
		}
	}()
	bounded.New[int, int](0, nil)
}

// GetOrAdd makes an entry once, and keeps none that failed to be made.
func TestGetOrAddMakesOnceAndKeepsNoFailure(t *testing.T) {
	c := bounded.New[string, int](2, nil)
	made := 0
	mk := func() (int, error) { made++; return made, nil }
	for range 2 {
		if v, err := bounded.GetOrAdd(c, "a", mk); v != 1 || err != nil {
			t.Fatalf("GetOrAdd = %d, %v; want 1, nil", v, err)
		}
	}
	if made != 1 {
		t.Errorf("made %d entries for one key, want 1", made)
	}
	fail := errors.New("cannot make it")
	if _, err := bounded.GetOrAdd(c, "b", func() (int, error) { return 0, fail }); err != fail {
		t.Errorf("GetOrAdd's error = %v, want %v", err, fail)
	}
	if c.Contains("b") {
		t.Error("an entry that failed to be made was added")
	}
}
