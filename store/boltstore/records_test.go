package boltstore

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"petstore/store"
)

// Strings that encoding/json escapes or rewrites: quotes and backslashes,
// control characters (with and without a short escape), the HTML characters,
// U+2028/U+2029, invalid and truncated UTF-8, and plain multi-byte text.
var recordStrings = []string{
	"", "Rex", `a"b\c`, "<script>alert('x')</script> & co", "tab\tnl\ncr\rbs\bff\f",
	"\x00\x01\x1f\x7f", "héllo 世界 🐶", "line\u2028para\u2029end", "\xff\xfe", "a\xc3",
	"\xed\xa0\x80", "\U0010ffff", "available", "a/b", "'single'", "\u00e9\u0301",
}

func TestRecordEncodersMatchEncodingJSON(t *testing.T) {
	ids := []int64{0, 1, -1, 42, math.MaxInt64, math.MinInt64}
	for _, s := range recordStrings {
		for _, id := range ids {
			p := store.Pet{ID: id, Name: s, CategoryID: -id, Status: store.PetStatus(s)}
			checkEncoding(t, &p, p.AppendJSON(nil))
			it := store.InventoryItem{PetID: id, Quantity: int(-id), Status: store.PetStatus(s)}
			checkEncoding(t, &it, it.AppendJSON(nil))
		}
	}
	berlin := time.FixedZone("CET", 3600)
	odd := time.FixedZone("odd", -(9*3600 + 30*60 + 17))
	dates := []*time.Time{
		nil,
		new(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)),
		new(time.Date(2030, 1, 2, 3, 4, 5, 120_000_000, berlin)),
		new(time.Date(1, 1, 1, 0, 0, 0, 1, odd)),
		new(time.Now()), // with a monotonic reading and the local zone
		new(time.Time{}),
	}
	for _, d := range dates {
		for _, id := range ids {
			for _, complete := range []bool{false, true} {
				o := store.Order{ID: id, PetID: -id, Quantity: int(id), ShipDate: d, Complete: complete}
				got, err := o.AppendJSON(nil)
				if err != nil {
					t.Fatalf("%+v: %v", o, err)
				}
				checkEncoding(t, &o, got)
			}
		}
	}
	for _, s := range recordStrings {
		for i, d := range dates {
			for _, id := range ids {
				r := deliveryRecord{EventSeq: uint64(id), Delivery: store.Delivery{
					ID: id, WebhookID: -id, EventID: store.EventID{Tx: 1, Seq: uint64(id)}, EventType: s,
					Attempt: int(id), Manual: id%2 == 0, State: s, AttemptedAt: d, Status: int(id),
					Error: s, DurationMS: id, Response: s, NextAttemptAt: dates[(i+1)%len(dates)],
				}}
				if d != nil {
					r.ScheduledAt = *d
				}
				got, err := encodeDelivery(&r)
				if err != nil {
					t.Fatalf("%+v: %v", r, err)
				}
				checkEncoding(t, &r, got)
			}
		}
	}
	// Dates RFC 3339 cannot hold fail as json.Marshal fails.
	for _, d := range []time.Time{
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2030, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 24*3600)),
	} {
		o := store.Order{ID: 1, ShipDate: &d}
		_, want := json.Marshal(&o)
		got, err := o.AppendJSON([]byte("x"))
		if want == nil || err == nil || err.Error() != want.Error() || got != nil {
			t.Fatalf("ship date %v: %q, %v; want error %v", d, got, err, want)
		}
		dl := store.Delivery{ID: 1, ScheduledAt: time.Now(), NextAttemptAt: &d}
		_, want = json.Marshal(&dl)
		got, err = dl.AppendJSON([]byte("x"))
		if want == nil || err == nil || err.Error() != want.Error() || got != nil {
			t.Fatalf("next attempt at %v: %q, %v; want error %v", d, got, err, want)
		}
	}
}

func checkEncoding(t *testing.T, v any, got []byte) {
	t.Helper()
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("%+v:\n got %s\nwant %s", v, got, want)
	}
}

func TestRecordDecodersMatchEncodingJSON(t *testing.T) {
	// What the encoders write, read back by the fast path.
	for _, s := range recordStrings {
		p := store.Pet{ID: 7, Name: s, CategoryID: 3, Status: store.StatusSold}
		checkPetDecoding(t, p.AppendJSON(nil))
		it := store.InventoryItem{PetID: 7, Quantity: 12, Status: store.PetStatus(s)}
		checkInventoryDecoding(t, it.AppendJSON(nil))
	}
	// Anything else, read by json.Unmarshal.
	for _, v := range []string{
		`{"id":1,"name":"Rex","categoryId":2,"status":"available"}`,
		`{"id":-9,"name":"","categoryId":0,"status":"pending"}`,
		`{"id":1, "name":"Rex","categoryId":2,"status":"available"}`,
		`{"name":"Rex","id":1,"categoryId":2,"status":"available"}`,
		`{"id":1,"name":"Rex","categoryId":2,"status":"available","x":1}`,
		`{"id":1,"name":"R\u00e9x","categoryId":2,"status":"available"}`,
		`{"id":01,"name":"Rex","categoryId":2,"status":"available"}`,
		`{"id":1e3,"name":"Rex","categoryId":2,"status":"available"}`,
		`{"id":9223372036854775807,"name":"Rex","categoryId":-9223372036854775808,"status":"sold"}`,
		`{"id":9223372036854775808,"name":"Rex","categoryId":2,"status":"sold"}`,
		`{"id":1,"name":"Rex","categoryId":2,"status":"available"} `,
		`{"id":1,"name":"Rex","categoryId":2,"status":"available"}}`,
		`{"id":1,"name":"R` + "\xff" + `x","categoryId":2,"status":"available"}`,
		`{"id":1,"name":"R` + "\t" + `x","categoryId":2,"status":"available"}`,
		`{"id":1,"name":null,"categoryId":2,"status":"available"}`,
		`{"id":-,"name":"Rex","categoryId":2,"status":"available"}`,
		`{"id":1,"name":"Rex","categoryId":2,"status":"available"`,
		`{"petId":1,"quantity":5,"status":"available"}`,
		`{"petId":1,"quantity":-0,"status":"sold"}`,
		`{"petId":1,"quantity":123456789012345678,"status":"sold"}`,
		`{"petId":1,"quantity":1234567890123456789,"status":"sold"}`,
		`{"petId":1,"quantity":5.5,"status":"available"}`,
		`{"quantity":5,"petId":1,"status":"available"}`,
		``, `null`, `[]`, `{}`,
	} {
		checkPetDecoding(t, []byte(v))
		checkInventoryDecoding(t, []byte(v))
	}
}

func checkPetDecoding(t *testing.T, v []byte) {
	t.Helper()
	checkDecoding(t, "decodePet", decodePet, v)
}

func checkInventoryDecoding(t *testing.T, v []byte) {
	t.Helper()
	checkDecoding(t, "decodeInventory", decodeInventory, v)
}

// checkDecoding checks that decode, named name, accepts and refuses what
// json.Unmarshal does, and decodes to the same value.
func checkDecoding[T comparable](t *testing.T, name string, decode func(int64, []byte) (T, error), v []byte) {
	t.Helper()
	var want T
	wantErr := json.Unmarshal(v, &want)
	got, err := decode(1, v)
	if (err != nil) != (wantErr != nil) || (err == nil && got != want) {
		t.Fatalf("%s(%q) = %+v, %v; json.Unmarshal: %+v, %v", name, v, got, err, want, wantErr)
	}
}

// FuzzRecordJSON checks the hand-written encoders and decoders against
// encoding/json on arbitrary strings and numbers, and the decoders on
// arbitrary bytes.
func FuzzRecordJSON(f *testing.F) {
	for _, s := range recordStrings {
		f.Add(s, int64(len(s)), int64(-1), true)
	}
	f.Fuzz(func(t *testing.T, s string, a, b int64, complete bool) {
		p := store.Pet{ID: a, Name: s, CategoryID: b, Status: store.PetStatus(s)}
		checkEncoding(t, &p, p.AppendJSON(nil))
		checkPetDecoding(t, p.AppendJSON(nil))
		it := store.InventoryItem{PetID: a, Quantity: int(b), Status: store.PetStatus(s)}
		checkEncoding(t, &it, it.AppendJSON(nil))
		checkInventoryDecoding(t, it.AppendJSON(nil))
		d := time.Unix(a%(1<<40), b%1e9).In(time.FixedZone("z", int(b%(14*3600))))
		o := store.Order{ID: a, PetID: b, Quantity: int(a ^ b), ShipDate: &d, Complete: complete}
		if got, err := o.AppendJSON(nil); err == nil {
			checkEncoding(t, &o, got)
		} else if _, want := json.Marshal(&o); want == nil || want.Error() != err.Error() {
			t.Fatalf("%+v: %v; json.Marshal: %v", o, err, want)
		}
		checkPetDecoding(t, []byte(s))
		checkInventoryDecoding(t, []byte(s))
	})
}

// The point of the hand-written records is to spare allocations: encoding
// writes into the caller's buffer, and decoding allocates the name only.
func TestRecordAllocations(t *testing.T) {
	p := store.Pet{ID: 12, Name: "Rex", CategoryID: 3, Status: store.StatusPending}
	it := store.InventoryItem{PetID: 12, Quantity: 1000, Status: store.StatusSold}
	day := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	o := store.Order{ID: 1, PetID: 12, Quantity: 2, ShipDate: &day}
	buf := make([]byte, 0, 256)
	pv, iv := p.AppendJSON(nil), it.AppendJSON(nil)
	for name, c := range map[string]struct {
		f    func()
		want float64
	}{
		"Pet.AppendJSON":       {func() { p.AppendJSON(buf) }, 0},
		"Inventory.AppendJSON": {func() { it.AppendJSON(buf) }, 0},
		"Order.AppendJSON":     {func() { o.AppendJSON(buf) }, 0},
		"decodePet":            {func() { decodePet(1, pv) }, 1},
		"decodeInventory":      {func() { decodeInventory(1, iv) }, 0},
	} {
		if got := testing.AllocsPerRun(100, c.f); got != c.want {
			t.Errorf("%s: %v allocations, want %v", name, got, c.want)
		}
	}
}

// The index keys, now built in one buffer, keep the layout keys.go
// documents (and that the list filters seek with).
func TestIndexKeysLayout(t *testing.T) {
	for _, s := range []store.PetStatus{store.StatusAvailable, store.StatusPending, store.StatusSold} {
		p := store.Pet{ID: 1<<40 + 7, CategoryID: 300, Status: s}
		want := [3]indexEntry{
			{bktPetsByStatus, slices.Concat(statusPrefix(s), itob(p.ID))},
			{bktPetsByCategory, slices.Concat(itob(p.CategoryID), itob(p.ID))},
			{bktPetsByCategoryStatus, slices.Concat(itob(p.CategoryID), statusPrefix(s), itob(p.ID))},
		}
		checkIndexEntries(t, petIndexEntries(&p), want)
	}
	for _, complete := range []bool{false, true} {
		o := store.Order{ID: 1<<33 + 5, PetID: 77, Complete: complete}
		want := [3]indexEntry{
			{bktOrdersByPet, slices.Concat(itob(o.PetID), itob(o.ID))},
			{bktOrdersByComplete, slices.Concat(completeByte(complete), itob(o.ID))},
			{bktOrdersByPetComplete, slices.Concat(itob(o.PetID), completeByte(complete), itob(o.ID))},
		}
		checkIndexEntries(t, orderIndexEntries(&o), want)
	}
}

func checkIndexEntries(t *testing.T, got, want [3]indexEntry) {
	t.Helper()
	for i := range got {
		if string(got[i].bucket) != string(want[i].bucket) || string(got[i].key) != string(want[i].key) {
			t.Errorf("entry %d: %s %x, want %s %x", i, got[i].bucket, got[i].key, want[i].bucket, want[i].key)
		}
	}
}

// BenchmarkPetRecord measures the hand-written pet record encoder and
// decoder against encoding/json on the same record, the figures that keep
// them (store/records.go says why): compare the ns/op of the pairs.
func BenchmarkPetRecord(b *testing.B) {
	p := store.Pet{ID: 123456, Name: "Rex the second", CategoryID: 42, Status: store.StatusAvailable}
	v := p.AppendJSON(nil)
	b.Run("encode/hand", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 128)
		for b.Loop() {
			buf = p.AppendJSON(buf[:0])
		}
	})
	b.Run("encode/encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(&p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodePet(p.ID, v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var q store.Pet
			if err := json.Unmarshal(v, &q); err != nil {
				b.Fatal(err)
			}
		}
	})
}
