package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/store"
	"petstore/store/postgres/pgtest"
)

// TestIfMatchKeepsTheFirstWrite: two clients read one pet and write it back
// with If-Match; the second gets 412 and the pet keeps the first's change.
// On both stores.
func TestIfMatchKeepsTheFirstWrite(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) { testIfMatch(t, newTestServer(t)) })
	t.Run("postgres", func(t *testing.T) {
		ts := startOnPostgres(t, pgtest.URL(t))
		testIfMatch(t, ts)
	})
}

func testIfMatch(t *testing.T, ts *testServer) {
	var cat store.Category
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201).decode(&cat)
	created := ts.do("POST", "/pets", fmt.Sprintf(`{"name":"Rex","categoryId":%d}`, cat.ID)).wantStatus(201)
	var pet store.Pet
	created.decode(&pet)
	path := fmt.Sprintf("/pets/%d", pet.ID)
	if tag := created.header.Get("ETag"); tag != `"1"` {
		t.Fatalf("POST /pets: ETag %q, want \"1\"", tag)
	}
	// Both clients read the pet, and so hold the same ETag.
	read := ts.do("GET", path, "").wantStatus(200)
	tag := read.header.Get("ETag")
	if tag != `"1"` {
		t.Fatalf("GET %s: ETag %q", path, tag)
	}
	withTag := func(method, body, tag string) *response {
		h := http.Header{"X-API-Key": {ts.apiKey}}
		if tag != "" {
			h.Set("If-Match", tag)
		}
		return ts.send(method, path, body, h)
	}
	first := withTag("PUT", fmt.Sprintf(`{"name":"Rex the first","categoryId":%d}`, cat.ID), tag).wantStatus(200)
	if got := first.header.Get("ETag"); got != `"2"` {
		t.Errorf("the first write's ETag %q, want \"2\"", got)
	}
	res := withTag("PUT", fmt.Sprintf(`{"name":"Rex the second","categoryId":%d}`, cat.ID), tag).wantError(412, "precondition_failed")
	if !strings.Contains(res.message(), "If-Match") {
		t.Errorf("412 message %q does not say why", res.message())
	}
	withTag("DELETE", "", tag).wantError(412, "precondition_failed")
	var now store.Pet
	ts.do("GET", path, "").wantStatus(200).decode(&now)
	if now.Name != "Rex the first" {
		t.Errorf("the pet after a stale write: %+v, want the first write's name", now)
	}

	// If-None-Match: 304 while unchanged, the pet once it changed.
	h := http.Header{"If-None-Match": {`"2"`}}
	if res := ts.send("GET", path, "", h); res.status != 304 || len(res.body) != 0 || res.header.Get("ETag") != `"2"` {
		t.Errorf("If-None-Match on the current version: %d %q ETag %q", res.status, res.body, res.header.Get("ETag"))
	}
	h.Set("If-None-Match", `"1", W/"7"`)
	ts.send("GET", path, "", h).wantStatus(200)

	// A weak or foreign tag never matches; * matches any existing version.
	withTag("PUT", fmt.Sprintf(`{"name":"x","categoryId":%d}`, cat.ID), `W/"2"`).wantError(412, "precondition_failed")
	withTag("PUT", fmt.Sprintf(`{"name":"Rex","categoryId":%d}`, cat.ID), `*`).wantStatus(200)
	withTag("DELETE", "", `"1", "3"`).wantStatus(204)
	// Any If-Match on a pet that does not exist is 412, * too; without it, 404.
	withTag("PUT", fmt.Sprintf(`{"name":"Rex","categoryId":%d}`, cat.ID), `*`).wantError(412, "precondition_failed")
	withTag("DELETE", "", `"3"`).wantError(412, "precondition_failed")
	withTag("DELETE", "", "").wantError(404, "not_found")

	// Categories and orders, the same way.
	cats := fmt.Sprintf("/categories/%d", cat.ID)
	if tag := ts.do("GET", cats, "").wantStatus(200).header.Get("ETag"); tag != `"1"` {
		t.Errorf("GET %s: ETag %q", cats, tag)
	}
	h = http.Header{"X-API-Key": {ts.apiKey}, "If-Match": {`"1"`}}
	if tag := ts.send("PUT", cats, `{"name":"Dogs"}`, h).wantStatus(200).header.Get("ETag"); tag != `"2"` {
		t.Errorf("PUT %s: ETag %q", cats, tag)
	}
	ts.send("PUT", cats, `{"name":"stale"}`, h).wantError(412, "precondition_failed")
	ts.send("DELETE", cats, "", h).wantError(412, "precondition_failed")
	if res := ts.send("GET", cats, "", http.Header{"If-None-Match": {`"2"`}}); res.status != 304 {
		t.Errorf("If-None-Match on a category: %d", res.status)
	}
	var rex store.Pet
	ts.do("POST", "/pets", fmt.Sprintf(`{"name":"Rex","categoryId":%d}`, cat.ID)).wantStatus(201).decode(&rex)
	ts.do("PUT", fmt.Sprintf("/store/inventory/%d", rex.ID), `{"quantity":5}`).wantStatus(200)
	placed := ts.do("POST", "/store/orders", fmt.Sprintf(`{"petId":%d}`, rex.ID)).wantStatus(201)
	var order store.Order
	placed.decode(&order)
	orders := fmt.Sprintf("/store/orders/%d", order.ID)
	if tag := placed.header.Get("ETag"); tag != `"1"` {
		t.Errorf("POST /store/orders: ETag %q", tag)
	}
	h.Set("If-Match", `"1"`)
	ts.send("PUT", orders, `{"complete":true}`, h).wantStatus(200)
	ts.send("PUT", orders, `{"complete":false}`, h).wantError(412, "precondition_failed")
	ts.send("DELETE", orders, "", h).wantError(412, "precondition_failed")
	var now2 store.Order
	ts.do("GET", orders, "").wantStatus(200).decode(&now2)
	if !now2.Complete {
		t.Errorf("the order after a stale update: %+v", now2)
	}
}

// TestSuccessorCarriesTheVersion: after the sunset of GET /pets/{petId},
// its successor GET /pets?id= carries what it did: the ETag of the one
// pet asked for, 304 to an If-None-Match that names it, and so a supported
// way to write with If-Match. Every read of one resource has an ETag, the
// inventory entry's too, and every write of one resource honours If-Match
// and If-None-Match (412; If-None-Match: * never overwrites). On both
// stores.
func TestSuccessorCarriesTheVersion(t *testing.T) {
	afterSunset := withNow(time.Date(2027, 7, 1, 0, 0, 0, 0, time.UTC))
	t.Run("bbolt", func(t *testing.T) { testSuccessorVersion(t, newTestServer(t, afterSunset)) })
	t.Run("postgres", func(t *testing.T) { testSuccessorVersion(t, startOnPostgres(t, pgtest.URL(t), afterSunset)) })
}

func testSuccessorVersion(t *testing.T, ts *testServer) {
	cat, pet := ts.addRex(0)
	ts.do("GET", fmt.Sprintf("/pets/%d", pet.ID), "").wantError(410, "gone")
	byID := fmt.Sprintf("/pets?id=%d", pet.ID)
	read := ts.do("GET", byID, "").wantStatus(200)
	if tag := read.header.Get("ETag"); tag != `"1"` {
		t.Fatalf("GET %s: ETag %q, want \"1\"", byID, tag)
	}
	if res := ts.send("GET", byID, "", http.Header{"If-None-Match": {`"1"`}}); res.status != 304 || len(res.body) != 0 || res.header.Get("ETag") != `"1"` {
		t.Errorf("GET %s with If-None-Match of its ETag: %d %q ETag %q", byID, res.status, res.body, res.header.Get("ETag"))
	}
	// The same pet twice is one pet; two pets, or a filter that leaves
	// none, have no version of one.
	if tag := ts.do("GET", byID+fmt.Sprintf("&id=%d", pet.ID), "").wantStatus(200).header.Get("ETag"); tag != `"1"` {
		t.Errorf("the same id twice: ETag %q", tag)
	}
	var tom store.Pet
	ts.do("POST", "/pets", fmt.Sprintf(`{"name":"Tom","categoryId":%d}`, cat.ID)).wantStatus(201).decode(&tom)
	if tag := ts.do("GET", byID+fmt.Sprintf("&id=%d", tom.ID), "").wantStatus(200).header.Get("ETag"); tag != "" {
		t.Errorf("two pets: ETag %q, want none", tag)
	}
	if tag := ts.do("GET", byID+"&status=sold", "").wantStatus(200).header.Get("ETag"); tag != "" {
		t.Errorf("a pet the filter leaves out: ETag %q, want none", tag)
	}

	write := func(method, path, body string, h ...string) *response {
		hdr := http.Header{"X-API-Key": {ts.apiKey}}
		for i := 0; i < len(h); i += 2 {
			hdr.Set(h[i], h[i+1])
		}
		return ts.send(method, path, body, hdr)
	}
	petPath := fmt.Sprintf("/pets/%d", pet.ID)
	body := fmt.Sprintf(`{"name":"Rex II","categoryId":%d}`, cat.ID)
	// If-None-Match: * refuses to overwrite; a tag of the current version too.
	write("PUT", petPath, body, "If-None-Match", "*").wantError(412, "precondition_failed")
	write("PUT", petPath, body, "If-None-Match", `W/"1"`).wantError(412, "precondition_failed")
	write("DELETE", petPath, "", "If-None-Match", "*").wantError(412, "precondition_failed")
	var now store.Pet
	ts.do("GET", byID, "").wantStatus(200).decode(&[]*store.Pet{&now})
	if now.Name != "Rex" {
		t.Fatalf("the pet after refused writes: %+v", now)
	}
	// The successor's ETag is what If-Match takes.
	put := write("PUT", petPath, body, "If-Match", read.header.Get("ETag")).wantStatus(200)
	write("PUT", petPath, body, "If-Match", read.header.Get("ETag")).wantError(412, "precondition_failed")
	if tag := ts.do("GET", byID, "").wantStatus(200).header.Get("ETag"); tag != put.header.Get("ETag") || tag != `"2"` {
		t.Errorf("after a write: ETag %q, the write's %q", tag, put.header.Get("ETag"))
	}
	write("PUT", fmt.Sprintf("/categories/%d", cat.ID), `{"name":"dogs"}`, "If-None-Match", "*").wantError(412, "precondition_failed")

	// The inventory entry: an ETag on its read and its write, and both
	// conditions honoured.
	stock := fmt.Sprintf("/store/inventory/%d", pet.ID)
	item := ts.do("GET", stock, "").wantStatus(200)
	tag := item.header.Get("ETag")
	if tag == "" {
		t.Fatalf("GET %s: no ETag", stock)
	}
	if res := ts.send("GET", stock, "", http.Header{"If-None-Match": {tag}}); res.status != 304 {
		t.Errorf("GET %s with If-None-Match of its ETag: %d", stock, res.status)
	}
	set := write("PUT", stock, `{"quantity":5}`, "If-Match", tag).wantStatus(200)
	if set.header.Get("ETag") == "" || set.header.Get("ETag") == tag {
		t.Errorf("PUT %s: ETag %q after %q", stock, set.header.Get("ETag"), tag)
	}
	write("PUT", stock, `{"quantity":7}`, "If-Match", tag).wantError(412, "precondition_failed")
	write("PUT", stock, `{"quantity":7}`, "If-None-Match", "*").wantError(412, "precondition_failed")
	var it store.InventoryItem
	ts.do("GET", stock, "").wantStatus(200).decode(&it)
	if it.Quantity != 5 {
		t.Errorf("the stock after refused writes: %+v", it)
	}
	if got := ts.do("GET", stock, "").header.Get("ETag"); got != set.header.Get("ETag") {
		t.Errorf("GET %s: ETag %q, the write answered %q", stock, got, set.header.Get("ETag"))
	}
	write("PUT", "/store/inventory/999999", `{"quantity":1}`, "If-Match", "*").wantError(412, "precondition_failed")

	// Orders: If-None-Match: * on a PUT and a DELETE of one that exists.
	placed := write("POST", "/store/orders", fmt.Sprintf(`{"petId":%d}`, pet.ID)).wantStatus(201)
	var order store.Order
	placed.decode(&order)
	orders := fmt.Sprintf("/store/orders/%d", order.ID)
	write("PUT", orders, `{"complete":true}`, "If-None-Match", "*").wantError(412, "precondition_failed")
	write("DELETE", orders, "", "If-None-Match", `"1"`).wantError(412, "precondition_failed")
	write("DELETE", orders, "", "If-None-Match", `"2"`).wantStatus(204)
}

// TestIfMatchOnReads: If-Match applies to reads too (RFC 9110 section
// 13.1.1). A read of one resource whose ETag it does not name (strongly)
// answers 412 precondition_failed, as a write would, before If-None-Match
// is looked at (section 13.2.2); one that names it, or *, answers as
// without it; any If-Match on a resource that does not exist is 412, as on
// writes. Reads change nothing.
func TestIfMatchOnReads(t *testing.T) {
	ts, cat, pet := newServerWithRex(t, 5)
	var order store.Order
	ts.do("POST", "/store/orders", fmt.Sprintf(`{"petId":%d}`, pet.ID)).wantStatus(201).decode(&order)
	inventory := fmt.Sprintf("/store/inventory/%d", pet.ID)
	stock := ts.do("GET", inventory, "").wantStatus(200).header.Get("ETag")
	read := func(method, path string, h ...string) *response {
		hdr := http.Header{}
		for i := 0; i < len(h); i += 2 {
			hdr.Add(h[i], h[i+1])
		}
		return ts.send(method, path, "", hdr)
	}
	for path, tag := range map[string]string{
		fmt.Sprintf("/pets/%d", pet.ID):           `"1"`,
		fmt.Sprintf("/pets?id=%d", pet.ID):        `"1"`,
		fmt.Sprintf("/categories/%d", cat.ID):     `"1"`,
		fmt.Sprintf("/store/orders/%d", order.ID): `"1"`,
		inventory: stock,
	} {
		want := read("GET", path).wantStatus(200)
		for _, match := range []string{tag, `"999", ` + tag, "*"} {
			if res := read("GET", path, "If-Match", match).wantStatus(200); string(res.body) != string(want.body) || res.header.Get("ETag") != tag {
				t.Errorf("GET %s If-Match %s: %s ETag %q, want %s", path, match, res.body, res.header.Get("ETag"), want.body)
			}
		}
		// A tag is compared as a string: "07" and "+7" are not "7".
		for _, stale := range []string{`"999"`, "W/" + tag, `"0` + tag[1:], `"+` + tag[1:]} {
			res := read("GET", path, "If-Match", stale).wantError(412, "precondition_failed")
			if !strings.Contains(res.message(), "If-Match") {
				t.Errorf("GET %s If-Match %s: message %q does not say why", path, stale, res.message())
			}
			if res := read("HEAD", path, "If-Match", stale); res.status != 412 || len(res.body) != 0 {
				t.Errorf("HEAD %s If-Match %s: %d %q", path, stale, res.status, res.body)
			}
			// If-Match is judged first: a stale one is 412, not 304.
			read("GET", path, "If-Match", stale, "If-None-Match", tag).wantError(412, "precondition_failed")
		}
		if res := read("GET", path, "If-Match", tag, "If-None-Match", tag); res.status != 304 {
			t.Errorf("GET %s If-Match and If-None-Match of its ETag: %d, want 304", path, res.status)
		}
	}
	// Any If-Match on what does not exist: 412; without one, 404.
	for _, path := range []string{"/pets/999", "/categories/999", "/store/orders/999", "/store/inventory/999", "/pets?id=999"} {
		read("GET", path, "If-Match", "*").wantError(412, "precondition_failed")
		read("GET", path, "If-Match", `"1"`).wantError(412, "precondition_failed")
	}
	read("GET", "/pets/999").wantError(404, "not_found")

	if p, err := ts.db.Pet(context.Background(), pet.ID); err != nil || p.Version != 1 || p.Name != "Rex" {
		t.Errorf("the pet after reads: %+v, %v", p, err)
	}
}

// TestIfMatchOnLists: a list has no ETag, so no tag If-Match names
// matches it: 412, as on a resource that does not exist; * asks only that
// it exist, which a list always does, and is answered as without it (RFC
// 9110 section 13.1.1).
func TestIfMatchOnLists(t *testing.T) {
	ts, cat, pet := newServerWithRex(t, 5)
	var tom store.Pet
	ts.do("POST", "/pets", fmt.Sprintf(`{"name":"Tom","categoryId":%d}`, cat.ID)).wantStatus(201).decode(&tom)
	ts.do("POST", "/store/orders", fmt.Sprintf(`{"petId":%d}`, pet.ID)).wantStatus(201)
	for _, path := range []string{
		"/pets", "/pets?status=available", fmt.Sprintf("/pets?id=%d&id=%d", pet.ID, tom.ID),
		"/categories", "/store/orders", fmt.Sprintf("/store/orders?petId=%d", pet.ID), "/store/inventory",
	} {
		want := ts.do("GET", path, "").wantStatus(200)
		if res := ts.send("GET", path, "", http.Header{"If-Match": {"*"}}).wantStatus(200); string(res.body) != string(want.body) {
			t.Errorf("GET %s If-Match *: %s, want %s", path, res.body, want.body)
		}
		for _, tag := range []string{`"1"`, `"1", "2"`, `W/"1"`} {
			res := ts.send("GET", path, "", http.Header{"If-Match": {tag}}).wantError(412, "precondition_failed")
			if !strings.Contains(res.message(), "If-Match") {
				t.Errorf("GET %s If-Match %s: message %q does not say why", path, tag, res.message())
			}
			if res := ts.send("HEAD", path, "", http.Header{"If-Match": {tag}}); res.status != 412 || len(res.body) != 0 {
				t.Errorf("HEAD %s If-Match %s: %d %q", path, tag, res.status, res.body)
			}
		}
	}
}
