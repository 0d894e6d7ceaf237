package domains

import (
	"slices"
	"testing"

	"petstore/store"
)

// FuzzRedirects feeds flattenRedirects arbitrary lists over a small set of
// names (so that chains and loops are common). Whatever it saves has one
// hop everywhere, no loop, known statuses, sources that are attached and
// targets that are verified;
// whatever it refuses is an EINVALID error with a message.
func FuzzRedirects(f *testing.F) {
	f.Add([]byte{0, 1, 0, 1, 2, 1}, uint16(301))
	f.Add([]byte{0, 1, 1, 2, 2, 0}, uint16(0))
	f.Add([]byte{3, 3, 4, 0}, uint16(308))
	f.Add([]byte{0, 5, 1, 0}, uint16(303))
	names := []string{"a.example.com", "b.example.com", "c.example.com", "localhost", "D.Example.com.", "x.example.org", "", "1.2.3.4"}
	attached := map[string]store.Domain{}
	for _, n := range []string{"a.example.com", "b.example.com", "c.example.com"} {
		attached[n] = store.Domain{Name: n, State: store.DomainVerified}
	}
	attached["d.example.com"] = store.Domain{Name: "d.example.com", State: store.DomainPending}
	f.Fuzz(func(t *testing.T, pairs []byte, status uint16) {
		var in []store.Redirect
		for i := 0; i+1 < len(pairs) && len(in) < 20; i += 2 {
			st := int(status)
			if pairs[i]&0x80 != 0 {
				st = 0 // the default
			}
			in = append(in, store.Redirect{From: names[int(pairs[i])%len(names)], To: names[int(pairs[i+1])%len(names)], Status: st})
		}
		out, err := flattenRedirects(in, attached, "localhost")
		if err != nil {
			if store.ErrorCode(err) != store.EINVALID || store.ErrorMessage(err) == "" {
				t.Fatalf("refusal %v (%T) is not an EINVALID with a message", err, err)
			}
			return
		}
		if len(out) != len(in) {
			t.Fatalf("saved %d redirects of %d", len(out), len(in))
		}
		froms := map[string]bool{}
		for _, r := range out {
			froms[r.From] = true
		}
		for _, r := range out {
			switch {
			case attached[r.From].Name == "":
				t.Fatalf("source %q is not attached: %+v", r.From, out)
			case r.To != "localhost" && attached[r.To].State != store.DomainVerified:
				t.Fatalf("target %q is neither verified nor the default address: %+v", r.To, out)
			case froms[r.To]:
				t.Fatalf("%s -> %s is not one hop: %s redirects too: %+v", r.From, r.To, r.To, out)
			case r.From == r.To:
				t.Fatalf("loop %+v", r)
			case !slices.Contains(RedirectStatuses, r.Status):
				t.Fatalf("status %d saved", r.Status)
			}
		}
	})
}
