package domains

import (
	"net"
	"strings"
	"testing"
)

// TestHostName: HostName strips a port, what strings.Trim(host, "[]")
// strips (its loop does so without Trim's cost) and one trailing dot, and
// lower-cases: the same names as the one call to strings.Trim gave.
func TestHostName(t *testing.T) {
	trimmed := func(h string) string {
		if strings.IndexByte(h, ':') >= 0 {
			if hh, _, err := net.SplitHostPort(h); err == nil {
				h = hh
			}
		}
		return strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), "."))
	}
	hosts := []string{"Shop.Example.com", "shop.example.com.", "127.0.0.1:8080", "[::1]:443", "[::1]", "[[x]]", "]x[", "[]", "", "x.]", "x.:80", "[", "]"}
	for _, host := range hosts {
		if got, want := HostName(host), trimmed(host); got != want {
			t.Errorf("HostName(%q) = %q, want %q", host, got, want)
		}
	}
	if got := HostName("[::1]:443"); got != "::1" {
		t.Errorf("HostName([::1]:443) = %q", got)
	}
}
