package domains

import (
	"net"
	"strings"
	"testing"
)

// TestHostName: HostName strips what strings.Trim(host, "[]") strips (its
// loop does so without Trim's cost), a port and one trailing dot, and
// lower-cases.
func TestHostName(t *testing.T) {
	for host, want := range map[string]string{
		"Shop.Example.com":  "shop.example.com",
		"shop.example.com.": "shop.example.com",
		"127.0.0.1:8080":    "127.0.0.1",
		"[::1]:443":         "::1",
		"[::1]":             "::1",
		"[[x]]":             "x",
		"]x[":               "x",
		"[]":                "",
		"":                  "",
		"x.]":               "x",
		"x.:80":             "x",
	} {
		if got := HostName(host); got != want {
			t.Errorf("HostName(%q) = %q, want %q", host, got, want)
		}
		// As the one call to strings.Trim did.
		h := host
		if strings.IndexByte(h, ':') >= 0 {
			if hh, _, err := net.SplitHostPort(h); err == nil {
				h = hh
			}
		}
		if old := strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), ".")); old != HostName(host) {
			t.Errorf("HostName(%q) = %q, strings.Trim's way %q", host, HostName(host), old)
		}
	}
}
