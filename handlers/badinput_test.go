package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/store"
)

// TestBadInputsGetClearErrors sends malformed and hostile requests. Each
// gets the documented 4xx with an Error body whose message names what is
// wrong (the helper checks the body against the Error contract), and none
// changes what is stored.
func TestBadInputsGetClearErrors(t *testing.T) {
	ts := newTestServer(t)
	_, pet := ts.addRex(3)
	long := strings.Repeat("n", 101)
	megabyte := `{"name":"` + strings.Repeat("x", 1<<20) + `","categoryId":1}`

	cases := []struct {
		name, method, path, body, contentType string
		status                                int
		code, mentions                        string
	}{
		{"malformed JSON", "POST", "/pets", `{"name":`, "", 400, "invalid_request", "JSON"},
		{"not an object", "POST", "/pets", `[1,2]`, "", 400, "invalid_request", "body"},
		{"null body", "POST", "/pets", `null`, "", 400, "invalid_request", "body"},
		{"empty body", "POST", "/pets", ``, "application/json", 400, "invalid_request", "body"},
		{"wrong type", "POST", "/pets", `{"name":42,"categoryId":1}`, "", 400, "invalid_request", "name"},
		{"string id", "POST", "/pets", `{"name":"a","categoryId":"1"}`, "", 400, "invalid_request", "categoryId"},
		{"float id", "POST", "/pets", `{"name":"a","categoryId":1.5}`, "", 400, "invalid_request", "categoryId"},
		{"missing required", "POST", "/pets", `{"categoryId":1}`, "", 400, "invalid_request", "name"},
		{"empty name", "POST", "/pets", `{"name":"","categoryId":1}`, "", 400, "invalid_request", "name"},
		{"name over the limit", "POST", "/pets", fmt.Sprintf(`{"name":"%s","categoryId":1}`, long), "", 400, "invalid_request", "name"},
		{"description over the limit", "POST", "/categories", fmt.Sprintf(`{"name":"a","description":"%s"}`, strings.Repeat("d", 1001)), "", 400, "invalid_request", "description"},
		{"enum outside the set", "POST", "/pets", `{"name":"a","categoryId":1,"status":"lost"}`, "", 400, "invalid_request", "status"},
		{"id overflowing int64", "POST", "/pets", `{"name":"a","categoryId":9223372036854775808}`, "", 400, "invalid_request", "categoryId"},
		{"huge id", "POST", "/pets", `{"name":"a","categoryId":1e400}`, "", 400, "invalid_request", ""},
		{"id in the body", "POST", "/pets", `{"id":7,"name":"a","categoryId":1}`, "", 400, "invalid_request", "id"},
		{"unknown field", "POST", "/categories", `{"name":"a","nmae":"b"}`, "", 400, "invalid_request", "nmae"},
		{"two JSON values", "POST", "/categories", `{"name":"a"}{"name":"b"}`, "", 400, "invalid_request", "body"},
		{"text/plain body", "POST", "/pets", `{"name":"a","categoryId":1}`, "text/plain", 415, "unsupported_media_type", "application/json"},
		{"form body", "POST", "/categories", `name=a`, "application/x-www-form-urlencoded", 415, "unsupported_media_type", ""},
		{"1 MiB body", "POST", "/pets", megabyte, "", 413, "payload_too_large", "64 KiB"},
		{"unknown category", "POST", "/pets", `{"name":"a","categoryId":999}`, "", 422, "unprocessable", "999"},
		{"order for a missing pet", "POST", "/store/orders", `{"petId":999}`, "", 422, "unprocessable", "999"},
		{"order without petId", "POST", "/store/orders", `{"quantity":1}`, "", 400, "invalid_request", "petId"},
		{"order quantity 0", "POST", "/store/orders", fmt.Sprintf(`{"petId":%d,"quantity":0}`, pet.ID), "", 400, "invalid_request", "quantity"},
		{"order quantity over the limit", "POST", "/store/orders", fmt.Sprintf(`{"petId":%d,"quantity":10001}`, pet.ID), "", 400, "invalid_request", "quantity"},
		{"bad shipDate", "POST", "/store/orders", fmt.Sprintf(`{"petId":%d,"shipDate":"tomorrow"}`, pet.ID), "", 400, "invalid_request", "shipDate"},
		{"order id in the body", "POST", "/store/orders", fmt.Sprintf(`{"id":1,"petId":%d}`, pet.ID), "", 400, "invalid_request", "id"},
		{"negative stock", "PUT", fmt.Sprintf("/store/inventory/%d", pet.ID), `{"quantity":-1}`, "", 400, "invalid_request", "quantity"},
		{"stock over the limit", "PUT", fmt.Sprintf("/store/inventory/%d", pet.ID), `{"quantity":1000001}`, "", 400, "invalid_request", "quantity"},
		{"stock without quantity", "PUT", fmt.Sprintf("/store/inventory/%d", pet.ID), `{}`, "", 400, "invalid_request", "quantity"},
		{"negative limit", "GET", "/pets?limit=-1", "", "", 400, "invalid_request", "limit"},
		{"zero limit", "GET", "/pets?limit=0", "", "", 400, "invalid_request", "limit"},
		{"huge limit", "GET", "/pets?limit=100000000000000000000", "", "", 400, "invalid_request", "limit"},
		{"limit not a number", "GET", "/pets?limit=ten", "", "", 400, "invalid_request", "limit"},
		{"broken cursor", "GET", "/pets?cursor=AAAA", "", "", 400, "invalid_request", "cursor"},
		{"cursor with bad characters", "GET", "/pets?cursor=%25%00", "", "", 400, "invalid_request", "cursor"},
		{"status filter outside the set", "GET", "/pets?status=lost", "", "", 400, "invalid_request", "status"},
		{"complete not a boolean", "GET", "/store/orders?complete=maybe", "", "", 400, "invalid_request", "complete"},
		{"id not a number", "GET", "/pets/abc", "", "", 400, "invalid_request", "petId"},
		{"id zero", "GET", "/pets/0", "", "", 400, "invalid_request", "petId"},
		{"id overflowing int64", "GET", "/pets/99999999999999999999", "", "", 400, "invalid_request", "petId"},
		{"unknown pet", "GET", "/pets/999", "", "", 404, "not_found", "999"},
		{"unknown order", "DELETE", "/store/orders/999", "", "", 404, "not_found", "999"},
		{"unknown path", "GET", "/nope", "", "", 404, "not_found", "/nope"},
		{"traversal", "GET", "/pets/../admin/project", "", "", 404, "not_found", ""},
		{"extra path segment", "GET", "/pets/1/extra", "", "", 404, "not_found", ""},
		{"trailing slash", "GET", "/pets/", "", "", 404, "not_found", ""},
		{"wrong method", "PATCH", "/pets", `{}`, "", 405, "method_not_allowed", "PATCH"},
		{"wrong method on an item", "POST", fmt.Sprintf("/pets/%d", pet.ID), `{}`, "", 405, "method_not_allowed", "POST"},
		{"body on a DELETE", "DELETE", fmt.Sprintf("/pets/%d", pet.ID), `{"really":true}`, "", 400, "invalid_request", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{"X-Api-Key": {ts.apiKey}}
			if tc.contentType != "" {
				h.Set("Content-Type", tc.contentType)
			}
			res := ts.with(t).send(tc.method, tc.path, tc.body, h).wantError(tc.status, tc.code)
			if tc.mentions != "" && !strings.Contains(res.message(), tc.mentions) {
				t.Errorf("message %q does not mention %q", res.message(), tc.mentions)
			}
		})
	}

	// Nothing of the above was stored, and the pet's stock is intact.
	pets, _, _ := ts.db.ListPets(context.Background(), store.PetFilter{})
	cats, _, _ := ts.db.ListCategories(context.Background(), store.Page{})
	orders, _, _ := ts.db.ListOrders(context.Background(), store.OrderFilter{})
	inv, _ := ts.db.InventoryItem(context.Background(), pet.ID)
	if len(pets) != 1 || len(cats) != 1 || len(orders) != 0 || inv.Quantity != 3 {
		t.Errorf("bad requests changed the store: %d pets, %d categories, %d orders, stock %d", len(pets), len(cats), len(orders), inv.Quantity)
	}
}

// TestDeprecatedOperation checks the headers before the sunset date and
// 410 gone from it on, with the date read from the spec.
func TestDeprecatedOperation(t *testing.T) {
	pub, _ := specs(t)
	op := pub.doc.Paths.Find("/pets/{petId}").Get
	sunsetStr, _ := op.Extensions["x-deprecated-sunset"].(string)
	sunset, err := time.Parse(time.DateOnly, sunsetStr)
	if err != nil || !op.Deprecated {
		t.Fatalf("the spec marks GET /pets/{petId} deprecated with a sunset date: %v %v", op.Deprecated, err)
	}

	before := newTestServer(t, withNow(sunset.Add(-time.Hour)))
	var cat store.Category
	before.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201).decode(&cat)
	before.do("POST", "/pets", fmt.Sprintf(`{"name":"Rex","categoryId":%d}`, cat.ID)).wantStatus(201)
	res := before.do("GET", "/pets/1", "").wantStatus(200)
	if got, want := res.header.Get("Sunset"), sunset.Format(http.TimeFormat); got != want {
		t.Errorf("Sunset %q, want %q", got, want)
	}
	if dep := res.header.Get("Deprecation"); !strings.HasPrefix(dep, "@") {
		t.Errorf("Deprecation %q is not an RFC 9745 date", dep)
	}
	if link := res.header.Get("Link"); !strings.Contains(link, `rel="sunset"`) || !strings.Contains(link, `rel="deprecation"`) ||
		!strings.Contains(link, `</pets?id=1>; rel="successor-version"`) {
		t.Errorf("Link %q", link)
	}
	// Every answer of the deprecated call names the successor, a 404 too;
	// and the successor reads the same pet.
	if link := before.do("GET", "/pets/2", "").wantError(404, "not_found").header.Get("Link"); !strings.Contains(link, `</pets?id=2>; rel="successor-version"`) {
		t.Errorf("404 Link %q", link)
	}
	var pets []store.Pet
	before.do("GET", "/pets?id=1", "").wantStatus(200).decode(&pets)
	if len(pets) != 1 || pets[0].ID != 1 || pets[0].Name != "Rex" {
		t.Errorf("GET /pets?id=1: %+v", pets)
	}
	// The other operations are not deprecated.
	if res := before.do("GET", "/pets", ""); res.header.Get("Deprecation") != "" {
		t.Error("GET /pets carries a Deprecation header")
	}

	after := newTestServer(t, withNow(sunset))
	res = after.do("GET", "/pets/1", "").wantError(410, "gone")
	if !strings.Contains(res.message(), sunsetStr) || !strings.Contains(res.message(), "GET /pets?id=1") || res.header.Get("Sunset") == "" ||
		!strings.Contains(res.header.Get("Link"), `</pets?id=1>; rel="successor-version"`) {
		t.Errorf("410 answer: %q, Sunset %q, Link %q", res.message(), res.header.Get("Sunset"), res.header.Get("Link"))
	}
	// After the sunset, what POST /pets points at still answers.
	after.do("POST", "/categories", `{"name":"cats"}`).wantStatus(201).decode(&cat)
	created := after.do("POST", "/pets", fmt.Sprintf(`{"name":"Bella","categoryId":%d}`, cat.ID)).wantStatus(201)
	after.do("GET", created.header.Get("Location"), "").wantStatus(200).decode(&pets)
	if len(pets) != 1 || pets[0].Name != "Bella" {
		t.Errorf("GET %s after the sunset: %+v", created.header.Get("Location"), pets)
	}
}

// TestPetsByID reads pets by their ids: several at once, in id order, the
// missing ones left out, combined with the other filters, paged.
func TestPetsByID(t *testing.T) {
	ts := newTestServer(t)
	var cat store.Category
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201).decode(&cat)
	for _, name := range []string{"A", "B", "C", "D"} {
		ts.do("POST", "/pets", fmt.Sprintf(`{"name":%q,"categoryId":%d,"status":"pending"}`, name, cat.ID)).wantStatus(201)
	}
	ts.do("PUT", "/pets/3", fmt.Sprintf(`{"name":"C","categoryId":%d,"status":"sold"}`, cat.ID)).wantStatus(200)
	names := func(path string) (string, string) {
		var pets []store.Pet
		res := ts.do("GET", path, "").wantStatus(200)
		res.decode(&pets)
		var out []string
		for _, p := range pets {
			out = append(out, p.Name)
		}
		return strings.Join(out, ","), res.header.Get("Link")
	}
	for _, c := range []struct{ path, names, link string }{
		{"/pets?id=4&id=2&id=99&id=2", "B,D", ""},
		{"/pets?id=99", "", ""},
		{"/pets?id=1&id=2&id=3&status=sold", "C", ""},
		{"/pets?id=1&id=2&id=3&limit=2", "A,B", `</pets?cursor=AAAAAAAAAAL_cQUqQA&id=1&id=2&id=3&limit=2>; rel="next"`},
		{"/pets?cursor=AAAAAAAAAAL_cQUqQA&id=1&id=2&id=3&limit=2", "C", ""},
	} {
		if got, link := names(c.path); got != c.names || link != c.link {
			t.Errorf("GET %s: %q with Link %q, want %q with %q", c.path, got, link, c.names, c.link)
		}
	}
	ts.do("GET", "/pets?id=0", "").wantError(400, "invalid_request")
	ts.do("GET", "/pets?id="+strings.Repeat("1&id=", 100)+"1", "").wantError(400, "invalid_request")
}

// TestCursorsAreBoundToTheirList: a cursor continues the list and filters
// it came from; taken to another list, or to other filters, it is 400
// naming the parameter. limit may change from page to page.
func TestCursorsAreBoundToTheirList(t *testing.T) {
	ts := newTestServer(t)
	var cat store.Category
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201).decode(&cat)
	ts.do("POST", "/categories", `{"name":"cats"}`).wantStatus(201)
	for i := range 3 {
		ts.do("POST", "/pets", fmt.Sprintf(`{"name":"pet %d","categoryId":%d}`, i, cat.ID)).wantStatus(201)
	}
	next := func(path string) string {
		link := ts.do("GET", path, "").wantStatus(200).header.Get("Link")
		u, ok := strings.CutPrefix(link, "<")
		u, _, ok2 := strings.Cut(u, ">")
		if !ok || !ok2 {
			t.Fatalf("GET %s: no next page in Link %q", path, link)
		}
		return u
	}
	pets := next("/pets?limit=1")
	_, cursor, _ := strings.Cut(pets, "cursor=")
	cursor, _, _ = strings.Cut(cursor, "&")
	filtered := next(fmt.Sprintf("/pets?limit=1&categoryId=%d", cat.ID))
	_, filteredCursor, _ := strings.Cut(filtered, "cursor=")
	filteredCursor, _, _ = strings.Cut(filteredCursor, "&")

	ts.do("GET", pets, "").wantStatus(200)
	ts.do("GET", "/pets?limit=5&cursor="+cursor, "").wantStatus(200) // another page size
	ts.do("GET", filtered, "").wantStatus(200)
	ts.do("GET", fmt.Sprintf("/pets?cursor=%s&categoryId=%d&limit=1", filteredCursor, cat.ID), "").wantStatus(200) // filters in another order
	for _, path := range []string{
		"/categories?cursor=" + cursor,
		"/store/orders?cursor=" + cursor,
		"/store/inventory?cursor=" + cursor,
		"/pets?status=sold&cursor=" + cursor,
		"/pets?cursor=" + filteredCursor,
		fmt.Sprintf("/pets?categoryId=%d&cursor=%s", cat.ID+1, filteredCursor),
	} {
		res := ts.do("GET", path, "").wantError(400, "invalid_request")
		if msg := res.message(); !strings.HasPrefix(msg, `query parameter "cursor": belongs to another list or to other filters`) {
			t.Errorf("GET %s: %q", path, msg)
		}
	}
	// The admin API's lists too.
	if res := ts.adminDo("GET", "/admin/api-keys?cursor="+cursor, ""); res.status != 400 || !strings.Contains(res.message(), `"cursor"`) {
		t.Errorf("a pets cursor on /admin/api-keys: %d %s", res.status, res.body)
	}
}
