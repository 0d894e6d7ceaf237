package handlers_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

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
