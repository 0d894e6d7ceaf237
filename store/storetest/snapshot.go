package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"petstore/store"
)

// SameSnapshot fails t for each part of got that differs from want: the
// records of each kind with their versions, the credentials' hashes, the
// project, the settings, the key/value space (modification times to the
// microsecond, PostgreSQL's precision), the webhooks, events, deliveries
// and kept answers, the sequences and the fan-out's place. It is how a
// move between stores is checked.
func SameSnapshot(t *testing.T, want, got *store.Snapshot) {
	t.Helper()
	kv := func(s []store.KVEntry) []store.KVEntry {
		out := make([]store.KVEntry, len(s))
		for i, e := range s {
			e.Modified = e.Modified.Truncate(time.Microsecond)
			out[i] = e
		}
		return out
	}
	for _, part := range []struct {
		name      string
		want, got any
	}{
		{"categories", want.Categories, got.Categories},
		{"category versions", versions(want.Categories), versions(got.Categories)},
		{"pets", want.Pets, got.Pets},
		{"pet versions", versions(want.Pets), versions(got.Pets)},
		{"inventory", want.Inventory, got.Inventory},
		{"orders", want.Orders, got.Orders},
		{"order versions", versions(want.Orders), versions(got.Orders)},
		{"API keys", want.APIKeys, got.APIKeys},
		{"domains", want.Domains, got.Domains},
		{"key/value", kv(want.KV), kv(got.KV)},
		{"project", want.Project, got.Project},
		{"settings", want.Settings, got.Settings},
		{"sequences", want.LastIDs, got.LastIDs},
		{"webhooks", want.Webhooks, got.Webhooks},
		{"events", events(want.Events), events(got.Events)},
		{"deliveries", deliveries(want.Deliveries), deliveries(got.Deliveries)},
		{"kept answers", answers(want.Answers), answers(got.Answers)},
		{"the fan-out's place", want.Dispatched, got.Dispatched},
	} {
		w, err := json.Marshal(part.want)
		if err != nil {
			t.Fatal(err)
		}
		g, err := json.Marshal(part.got)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w, g) {
			t.Errorf("%s differ:\n got %.2000s\nwant %.2000s", part.name, g, w)
		}
	}
	if !bytes.Equal(want.AdminTokenSHA256, got.AdminTokenSHA256) {
		t.Errorf("admin token hash %x, want %x", got.AdminTokenSHA256, want.AdminTokenSHA256)
	}
}

// events, deliveries and answers are their records with their times to
// the microsecond, PostgreSQL's precision.
func events(s []store.StoredEvent) []store.StoredEvent {
	out := make([]store.StoredEvent, len(s))
	for i, e := range s {
		e.CreatedAt = e.CreatedAt.Truncate(time.Microsecond)
		out[i] = e
	}
	return out
}

func deliveries(s []store.Delivery) []string {
	out := make([]string, len(s))
	for i, d := range s {
		d.ScheduledAt = d.ScheduledAt.Truncate(time.Microsecond)
		b, _ := json.Marshal(d)
		out[i] = fmt.Sprint(d.EventID, " ", string(b))
	}
	return out
}

func answers(s []store.StoredAnswer) []store.StoredAnswer {
	out := make([]store.StoredAnswer, len(s))
	for i, a := range s {
		a.CreatedAt, a.ExpiresAt = a.CreatedAt.Truncate(time.Microsecond), a.ExpiresAt.Truncate(time.Microsecond)
		out[i] = a
	}
	return out
}

// versions lists "id:version" of each record.
func versions[T store.Pet | store.Category | store.Order](records []T) []string {
	out := make([]string, len(records))
	for i, r := range records {
		switch r := any(r).(type) {
		case store.Pet:
			out[i] = fmt.Sprint(r.ID, ":", r.Version)
		case store.Category:
			out[i] = fmt.Sprint(r.ID, ":", r.Version)
		case store.Order:
			out[i] = fmt.Sprint(r.ID, ":", r.Version)
		}
	}
	return out
}
