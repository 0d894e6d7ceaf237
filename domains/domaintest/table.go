package domaintest

import "testing"

// CheckTable fails tb for each input in want that f does not map to the
// result want gives it; name is f's name in the messages.
func CheckTable[In, Out comparable](tb testing.TB, name string, f func(In) Out, want map[In]Out) {
	tb.Helper()
	for in, w := range want {
		if got := f(in); got != w {
			tb.Errorf("%s(%#v) = %v, want %v", name, in, got, w)
		}
	}
}
