package handlers_test

import (
	"fmt"
	"net/http"
	"regexp"
	"testing"
)

// TestRequestIDs: a client's plain id comes back as its answer's
// X-Request-Id (the first, when it sends several); anything else, or none,
// gets a fresh 24-hex-digit id, different on every answer; and the ids and
// the successor's Link, cut from shared blocks (headervalues.go), are each
// answer's own however many answers come between.
func TestRequestIDs(t *testing.T) {
	ts, _, pet := newServerWithRex(t, 0)
	path := fmt.Sprintf("/pets/%d", pet.ID)
	generated := regexp.MustCompile(`^[0-9a-f]{24}$`)
	cases := []struct {
		name string
		sent []string
		want string // "" means a generated one
	}{
		{"none", nil, ""},
		{"plain", []string{"trace-42.a_B"}, "trace-42.a_B"},
		{"several", []string{"first-id", "second-id"}, "first-id"},
		{"not plain", []string{"has space"}, ""},
		{"empty", []string{""}, ""},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			if c.sent != nil {
				h["X-Request-Id"] = c.sent
			}
			r := ts.with(t).request("GET", path, nil, h)
			r.wantStatus(http.StatusOK)
			got := r.header.Values("X-Request-Id")
			if len(got) != 1 {
				t.Fatalf("X-Request-Id %q: want one", got)
			}
			switch {
			case c.want != "" && got[0] != c.want:
				t.Errorf("X-Request-Id %q, want the client's %q", got[0], c.want)
			case c.want == "" && !generated.MatchString(got[0]):
				t.Errorf("X-Request-Id %q, want 24 hex digits", got[0])
			case c.want == "" && seen[got[0]]:
				t.Errorf("X-Request-Id %q given twice", got[0])
			}
			seen[got[0]] = true
			if want := fmt.Sprintf(`</pets?id=%d>; rel="successor-version"`, pet.ID); !regexp.MustCompile(regexp.QuoteMeta(want) + `$`).MatchString(r.header.Get("Link")) {
				t.Errorf("Link %q does not end with %s", r.header.Get("Link"), want)
			}
		})
	}
}
