package handlers

import (
	"strings"
	"sync"
)

// headerValues carves per-request header values of hot routes out of
// shared blocks instead of two allocations each. A strings.Builder only
// appends, so a string cut from it stays; each []string is a one-slot,
// full-capacity window written once, so that an Add copies it.
type headerValues struct {
	text  strings.Builder
	slots []string
}

// Sizes of the blocks: a few dozen values each.
const (
	headerTextBlock  = 4 << 10
	headerSlotsBlock = 64
)

var headerValuesPool = sync.Pool{New: func() any { return new(headerValues) }}

// headerValue returns the concatenation of parts as a header value.
func headerValue(parts ...string) []string {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	v := headerValuesPool.Get().(*headerValues)
	if v.text.Cap()-v.text.Len() < n {
		v.text = strings.Builder{}
		v.text.Grow(max(n, headerTextBlock))
	}
	start := v.text.Len()
	for _, p := range parts {
		v.text.WriteString(p)
	}
	if len(v.slots) == 0 {
		v.slots = make([]string, headerSlotsBlock)
	}
	v.slots[0] = v.text.String()[start:]
	out := v.slots[:1:1]
	v.slots = v.slots[1:]
	headerValuesPool.Put(v)
	return out
}
