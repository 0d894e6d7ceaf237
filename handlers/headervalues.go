package handlers

import (
	"strings"
	"sync"
)

// headerValues carves the per-request header values that every answer of
// a hot route carries (X-Request-Id, a deprecated call's Link) out of
// shared blocks, instead of two allocations each (the string and its
// one-element []string), which were most of what GET /pets/{id} allocates.
//
// It is safe without unsafe: the text is a strings.Builder's, which only
// ever appends, so a string cut from it stays as it was; each []string is
// a one-slot, full-capacity window on a shared array, written once before
// it is handed out, so that an Add to the header copies it, as with the
// shared values of securityHeaders. A block stays in memory while any
// value cut from it does, which is while its answers are being written.
type headerValues struct {
	text  strings.Builder
	start int
	slots []string
}

// Sizes of the blocks: a few dozen values each.
const (
	headerTextBlock  = 4 << 10
	headerSlotsBlock = 64
)

var headerValuesPool = sync.Pool{New: func() any { return new(headerValues) }}

// begin readies room for a value of up to n bytes, written next with
// WriteString or Write on v.text.
func (v *headerValues) begin(n int) {
	if v.text.Cap()-v.text.Len() < n {
		v.text = strings.Builder{}
		v.text.Grow(max(n, headerTextBlock))
	}
	v.start = v.text.Len()
}

// end returns what was written since begin as a header value.
func (v *headerValues) end() []string {
	if len(v.slots) == 0 {
		v.slots = make([]string, headerSlotsBlock)
	}
	v.slots[0] = v.text.String()[v.start:]
	out := v.slots[:1:1]
	v.slots = v.slots[1:]
	return out
}

// headerValue returns the concatenation of parts as a header value.
func headerValue(parts ...string) []string {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	v := headerValuesPool.Get().(*headerValues)
	v.begin(n)
	for _, p := range parts {
		v.text.WriteString(p)
	}
	out := v.end()
	headerValuesPool.Put(v)
	return out
}
