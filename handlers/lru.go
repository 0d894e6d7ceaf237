package handlers

import "container/list"

// lruMap is a map that holds at most max entries and, to take a new one
// when full, forgets the least recently used. The limiters keep their
// per-client state in one, so that a flood from many addresses costs a
// fixed amount of memory. It is not safe for concurrent use.
type lruMap[K comparable, V any] struct {
	max   int
	items map[K]*list.Element // of *lruEntry[K, V]
	order *list.List          // front: the most recently used
}

type lruEntry[K comparable, V any] struct {
	key   K
	value V
}

func newLRUMap[K comparable, V any](max int) *lruMap[K, V] {
	return &lruMap[K, V]{max: max, items: map[K]*list.Element{}, order: list.New()}
}

// use returns k's value, now the most recently used; when k is absent, a
// new zero value, and found is false.
func (m *lruMap[K, V]) use(k K) (v *V, found bool) {
	if e, ok := m.items[k]; ok {
		m.order.MoveToFront(e)
		return &e.Value.(*lruEntry[K, V]).value, true
	}
	if m.order.Len() >= m.max {
		oldest := m.order.Back()
		m.order.Remove(oldest)
		delete(m.items, oldest.Value.(*lruEntry[K, V]).key)
	}
	entry := &lruEntry[K, V]{key: k}
	m.items[k] = m.order.PushFront(entry)
	return &entry.value, false
}

// peek returns k's value without making it the most recently used.
func (m *lruMap[K, V]) peek(k K) (v *V, found bool) {
	if e, ok := m.items[k]; ok {
		return &e.Value.(*lruEntry[K, V]).value, true
	}
	return nil, false
}
