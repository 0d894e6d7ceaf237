package bounded_test

import (
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
