package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"petstore/store"
)

// SameSnapshot fails t for each part of got that differs from want, times
// to the microsecond, PostgreSQL's precision: how a move between stores is
// checked.
func SameSnapshot(t *testing.T, want, got *Snapshot) {
	t.Helper()
	kv := func(s []store.KVEntry) []store.KVEntry {
		return truncated(s, func(e *store.KVEntry) { e.Modified = e.Modified.Truncate(time.Microsecond) })
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

// truncated is a copy of s, never nil, with trunc applied to each record.
func truncated[T any](s []T, trunc func(*T)) []T {
	out := append(make([]T, 0, len(s)), s...)
	for i := range out {
		trunc(&out[i])
	}
	return out
}

func events(s []store.StoredEvent) []store.StoredEvent {
	return truncated(s, func(e *store.StoredEvent) { e.CreatedAt = e.CreatedAt.Truncate(time.Microsecond) })
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
	return truncated(s, func(a *store.StoredAnswer) {
		a.CreatedAt, a.ExpiresAt = a.CreatedAt.Truncate(time.Microsecond), a.ExpiresAt.Truncate(time.Microsecond)
	})
}

// versions lists "id:version" of each record.
func versions[T store.Pet | store.Category | store.Order](records []T) []string {
	out := make([]string, len(records))
	for i := range records {
		r := reflect.ValueOf(records[i])
		out[i] = fmt.Sprint(r.FieldByName("ID").Int(), ":", r.FieldByName("Version").Int())
	}
	return out
}

// Snapshot is a whole stream in memory: a move between stores is checked
// by comparing the snapshots of both (SameSnapshot).
type Snapshot struct {
	Categories []store.Category
	Pets       []store.Pet
	Inventory  []store.InventoryItem
	Orders     []store.Order
	APIKeys    []store.StoredAPIKey
	Domains    []store.Domain
	KV         []store.KVEntry
	Webhooks   []store.Webhook
	Events     []store.StoredEvent
	Deliveries []store.Delivery
	Answers    []store.StoredAnswer
	store.Rest
}

// Collect reads a whole stream into memory, copying what the source only
// lends.
func Collect(ctx context.Context, from store.Streamer) (*Snapshot, error) {
	c := collector{&Snapshot{}}
	if err := from.Stream(ctx, c); err != nil {
		return nil, err
	}
	return c.s, nil
}

type collector struct{ s *Snapshot }

// Totals starts the stream, or starts it again.
func (c collector) Totals(store.Totals) error {
	*c.s = Snapshot{}
	return nil
}

// Record appends a copy of r to the Snapshot's list of its type, with
// copies of its slices of bytes and strings (nil when empty).
func (c collector) Record(r any) error {
	rec := reflect.New(reflect.TypeOf(r).Elem()).Elem()
	rec.Set(reflect.ValueOf(r).Elem())
	for i := range rec.NumField() {
		if f := rec.Field(i); f.Kind() == reflect.Slice && (f.Type().Elem().Kind() == reflect.Uint8 || f.Type().Elem().Kind() == reflect.String) {
			f.Set(reflect.AppendSlice(reflect.Zero(f.Type()), f))
		}
	}
	s := reflect.ValueOf(c.s).Elem()
	for i := range s.NumField() {
		if list := s.Field(i); list.Kind() == reflect.Slice && list.Type().Elem() == rec.Type() {
			list.Set(reflect.Append(list, rec))
		}
	}
	return nil
}

func (c collector) Rest(r store.Rest) error {
	r.AdminTokenSHA256 = append([]byte(nil), r.AdminTokenSHA256...) // nil when empty
	c.s.Rest = r
	return nil
}

// Stream gives the snapshot to a Sink, so that a test can Import records
// no API writes (an older version's kept answers).
func (s *Snapshot) Stream(ctx context.Context, to store.Sink) error {
	var totals store.Totals
	lists := reflect.ValueOf(s).Elem()
	for i := range lists.NumField() - 1 { // the lists, then Rest
		reflect.ValueOf(&totals).Elem().FieldByName(lists.Type().Field(i).Name).SetInt(int64(lists.Field(i).Len()))
	}
	err := to.Totals(totals)
	for i := range lists.NumField() - 1 {
		for j := range lists.Field(i).Len() {
			if err == nil {
				err = ctx.Err()
			}
			if err == nil {
				err = to.Record(lists.Field(i).Index(j).Addr().Interface())
			}
		}
	}
	if err != nil {
		return err
	}
	return to.Rest(s.Rest)
}
