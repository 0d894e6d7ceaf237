package handlers

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestHeaderValuesStayAsCut: values cut from the shared blocks keep their
// text while many more are cut after them, across blocks, and values longer
// than a block come out whole.
func TestHeaderValuesStayAsCut(t *testing.T) {
	type kept struct {
		v    []string
		want string
	}
	var all []kept
	for i := range 3000 {
		want := fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", i%200))
		if i%500 == 0 {
			want = strings.Repeat("long", headerTextBlock) // past a block
		}
		v := headerValue(want[:len(want)/2], want[len(want)/2:])
		all = append(all, kept{v, want})
	}
	for i, k := range all {
		if len(k.v) != 1 || cap(k.v) != 1 || k.v[0] != k.want {
			t.Fatalf("value %d: len %d cap %d, %.40q, want %.40q", i, len(k.v), cap(k.v), k.v[0], k.want)
		}
	}
}

// TestHeaderValuesAddCopies: an Add to a header holding a cut value leaves
// the values cut beside it alone (each is a full one-slot slice).
func TestHeaderValuesAddCopies(t *testing.T) {
	a, b := headerValue("a"), headerValue("b")
	h := http.Header{"Link": a}
	h.Add("Link", "<x>; rel=next")
	if got := h.Values("Link"); len(got) != 2 || got[0] != "a" || got[1] != "<x>; rel=next" {
		t.Fatalf("Link %q", got)
	}
	if a[0] != "a" || b[0] != "b" || len(a) != 1 || len(b) != 1 {
		t.Fatalf("neighbours changed: %q %q", a, b)
	}
	id := newRequestID()
	if len(id) != 1 || len(id[0]) != 24 || strings.Trim(id[0], "0123456789abcdef") != "" {
		t.Fatalf("request id %q: want 24 hex digits", id)
	}
}

// TestHeaderValuesConcurrent: goroutines cutting values at once each get
// their own (run with -race).
func TestHeaderValuesConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var vs [][]string
			for i := range 2000 {
				vs = append(vs, headerValue(fmt.Sprintf("g%d-", g), fmt.Sprint(i)))
			}
			for i, v := range vs {
				if want := fmt.Sprintf("g%d-%d", g, i); v[0] != want {
					errs <- fmt.Errorf("got %q, want %q", v[0], want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
