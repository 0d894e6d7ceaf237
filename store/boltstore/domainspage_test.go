package boltstore_test

import (
	"slices"
	"testing"
	"time"

	"petstore/store"
)

// Domains come in pages in the order they were added (by name within the
// same second), and a cursor stays valid when its domain is removed.
func TestDomainsPage(t *testing.T) {
	db := MustOpenDB(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, d := range []store.Domain{
		{Name: "e.example", AddedAt: t0},
		{Name: "c.example", AddedAt: t0.Add(time.Second)},
		{Name: "a.example", AddedAt: t0.Add(time.Second)},
		{Name: "d.example", AddedAt: t0.Add(2 * time.Second)},
		{Name: "b.example", AddedAt: t0.Add(3 * time.Second)},
	} {
		if err := db.AddDomain(ctx, &d); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"e.example", "a.example", "c.example", "d.example", "b.example"}
	names := func(ds []store.Domain) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Name)
		}
		return out
	}
	all, err := db.Domains(ctx)
	if err != nil || !slices.Equal(names(all), want) {
		t.Fatalf("Domains: %v, %v; want %v", names(all), err, want)
	}

	var got []string
	var after *store.DomainCursor
	for pages := 1; ; pages++ {
		if pages > len(want) {
			t.Fatalf("more pages than domains: %v", got)
		}
		ds, next, err := db.DomainsPage(ctx, 2, after)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, names(ds)...)
		if next == nil {
			break
		}
		if pages == 1 {
			// The cursor's own domain goes; the next page is unchanged.
			if err := db.RemoveDomain(ctx, "a.example"); err != nil {
				t.Fatal(err)
			}
		}
		after = next
	}
	want = []string{"e.example", "a.example", "c.example", "d.example", "b.example"}
	if !slices.Equal(got, want) {
		t.Fatalf("pages of 2: %v, want %v", got, want)
	}
}
