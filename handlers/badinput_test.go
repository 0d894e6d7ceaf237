package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"petstore/events/webhooktest"
	"petstore/store"
	"petstore/store/postgres/pgtest"
)

// TestBadInputsGetClearErrors sends malformed and hostile requests. Each
// gets the documented 4xx with an Error body whose message names what is
// wrong (the helper checks the body against the Error contract), and none
// changes what is stored.
func TestBadInputsGetClearErrors(t *testing.T) {
	ts, _, pet := newServerWithRex(t, 3)
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

// validBodies holds, per operation with a request body, one that its schema
// accepts, so that the unknown parameter is the only fault of the request.
var validBodies = map[string]string{
	"createPet":       `{"name":"Rex","categoryId":1}`,
	"replacePet":      `{"name":"Rex","categoryId":1}`,
	"createCategory":  `{"name":"dogs"}`,
	"replaceCategory": `{"name":"dogs"}`,
	"placeOrder":      `{"petId":1}`,
	"updateOrder":     `{"complete":true}`,
	"setInventory":    `{"quantity":1}`,
	"updateProject":   `{"name":"shop"}`,
	"createAPIKey":    `{"name":"shop"}`,
	"addDomain":       `{"name":"shop.example.com"}`,
	"updateSettings":  `{"domains":{}}`,
	"createWebhook":   `{"url":"https://hooks.example.com/","events":["*"]}`,
	"updateWebhook":   `{"description":"shop"}`,
}

// TestUnknownQueryParameter sends every operation of both documents a query
// parameter it does not define: each answers 400 naming it, where the
// validator alone would let it pass (GET /pets?stauts=sold answered every
// pet).
func TestUnknownQueryParameter(t *testing.T) {
	ts := newTestServer(t)
	pub, admin := specs(t)
	n := 0
	for _, d := range []*specDoc{pub, admin} {
		for path, item := range d.doc.Paths.Map() {
			for method, op := range item.Operations() {
				n++
				body := ""
				if op.RequestBody != nil {
					var ok bool
					if body, ok = validBodies[op.OperationID]; !ok {
						t.Errorf("%s: no valid body in validBodies", op.OperationID)
						continue
					}
				}
				h := http.Header{"Authorization": {"Bearer " + ts.admin}, "X-Api-Key": {ts.apiKey}}
				p := strings.NewReplacer("{petId}", "1", "{categoryId}", "1", "{orderId}", "1", "{id}", "1", "{deliveryId}", "1", "{name}", "shop.example.com").Replace(path)
				r := ts.with(t).send(method, p+"?limit=5&stauts=sold", body, h)
				if method == http.MethodGet && (path == "/pets" || path == "/categories") {
					// limit is theirs: only stauts is unknown.
					r.wantError(400, "invalid_request")
					if msg := r.message(); !strings.Contains(msg, `"stauts"`) || strings.Contains(msg, `"limit"`) {
						t.Errorf("%s %s: message %q does not name stauts alone", method, path, msg)
					}
					continue
				}
				r.wantError(400, "invalid_request")
				if msg := r.message(); !strings.Contains(msg, `"stauts"`) {
					t.Errorf("%s %s: message %q does not name stauts", method, path, msg)
				}
			}
		}
	}
	if n < 30 {
		t.Fatalf("only %d operations in both documents", n)
	}
	// The parameters an operation defines still pass, its path item's too.
	ts.do("GET", "/pets?status=sold&categoryId=1&limit=5", "").wantStatus(200)
}

// nulCase is one string field of an operation, found in the documents,
// with a request that holds U+0000 there and is otherwise the operation's
// example.
type nulCase struct {
	method, target, body string
	field                string // as the message names it
}

// nulCases lists every string field of both documents: path and query
// parameters, and the strings of every JSON body (nested ones included),
// each in a request of its own.
func nulCases(t *testing.T) []nulCase {
	t.Helper()
	pub, admin := specs(t)
	var out []nulCase
	for _, d := range []*specDoc{pub, admin} {
		for _, path := range d.doc.Paths.InMatchingOrder() {
			item := d.doc.Paths.Value(path)
			for method, op := range item.Operations() {
				params := slices.Concat(item.Parameters, op.Parameters)
				fill := func(bad string) string {
					target := path
					for _, p := range params {
						if p.Value.In != "path" {
							continue
						}
						v := "1"
						if isString(p.Value.Schema) {
							v = "shop.example.com"
						}
						if p.Value.Name == bad {
							v = "shop%00example.com"
						}
						target = strings.ReplaceAll(target, "{"+p.Value.Name+"}", v)
					}
					return target
				}
				body := ""
				if op.RequestBody != nil && op.RequestBody.Value.Content[echoJSON] != nil {
					body = string(exampleBody(t, op))
				}
				for _, p := range params {
					if !isString(p.Value.Schema) {
						continue
					}
					switch p.Value.In {
					case "path":
						out = append(out, nulCase{method, fill(p.Value.Name), body, p.Value.Name})
					case "query":
						out = append(out, nulCase{method, fill("") + "?" + p.Value.Name + "=a%00b", body, p.Value.Name})
					}
				}
				if body == "" {
					continue
				}
				var example map[string]any
				if err := json.Unmarshal([]byte(body), &example); err != nil {
					t.Fatal(err)
				}
				for _, field := range stringFields(op.RequestBody.Value.Content[echoJSON].Schema, nil) {
					out = append(out, nulCase{method, fill(""), withNUL(t, example, field), "body." + strings.Join(field, ".")})
				}
			}
		}
	}
	return out
}

func isString(s *openapi3.SchemaRef) bool {
	return s != nil && s.Value != nil && s.Value.Type.Is(openapi3.TypeString)
}

// stringFields are the paths of the string properties of an object schema,
// through nested objects and allOf, read-only ones left out.
func stringFields(s *openapi3.SchemaRef, prefix []string) [][]string {
	if s == nil || s.Value == nil || s.Value.ReadOnly {
		return nil
	}
	var out [][]string
	for _, sub := range s.Value.AllOf {
		out = append(out, stringFields(sub, prefix)...)
	}
	for name, p := range s.Value.Properties {
		if p.Value == nil || p.Value.ReadOnly {
			continue
		}
		field := append(slices.Clone(prefix), name)
		switch {
		case isString(p):
			out = append(out, field)
		case p.Value.Type.Is(openapi3.TypeObject) || len(p.Value.AllOf) > 0:
			out = append(out, stringFields(p, field)...)
		}
	}
	return out
}

// withNUL is example with "a\u0000b" at field, as JSON.
func withNUL(t *testing.T, example map[string]any, field []string) string {
	t.Helper()
	var doc map[string]any
	b, _ := json.Marshal(example)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	obj := doc
	for _, name := range field[:len(field)-1] {
		next, ok := obj[name].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[name] = next
		}
		obj = next
	}
	obj[field[len(field)-1]] = "a\x00b"
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestNULInEveryStringFieldIsRefused: U+0000, which a bbolt file would keep
// and PostgreSQL refuses, is 400 invalid_request naming the field, in every
// string parameter and body field of both documents, on both stores.
func TestNULInEveryStringFieldIsRefused(t *testing.T) {
	cases := nulCases(t)
	if len(cases) < 10 {
		t.Fatalf("only %d string fields found in the documents", len(cases))
	}
	run := func(t *testing.T, ts *testServer) {
		h := http.Header{"Content-Type": {echoJSON}, "X-Api-Key": {ts.apiKey}, "Authorization": {"Bearer " + ts.admin}}
		for _, c := range cases {
			res := ts.with(t).send(c.method, c.target, c.body, h.Clone())
			if res.status != http.StatusBadRequest || !strings.Contains(res.message(), c.field) {
				t.Errorf("%s %s %s: %d %s; want 400 naming %s", c.method, c.target, c.body, res.status, res.body, c.field)
			}
		}
	}
	t.Run("bbolt", func(t *testing.T) {
		ts := newTestServer(t, withoutCredentialLimit)
		ts.do(http.MethodPost, "/categories", `{"name":"dogs"}`).wantStatus(http.StatusCreated)
		run(t, ts)
		// Nothing was stored.
		res := ts.do(http.MethodGet, "/categories", "").wantStatus(http.StatusOK)
		if strings.Contains(string(res.body), `\u0000`) {
			t.Errorf("a NUL was stored: %s", res.body)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		ts := startOnPostgres(t, pgtest.URL(t))
		ts.do(http.MethodPost, "/categories", `{"name":"dogs"}`).wantStatus(http.StatusCreated)
		run(t, ts)
	})
	// The same check refuses a raw %00 in a query string's value and a
	// key, as kin-openapi would not for a parameter the operation lacks.
	ts := newTestServer(t)
	ts.do(http.MethodGet, "/pets?cursor="+url.QueryEscape("\x00"), "").wantError(http.StatusBadRequest, "invalid_request")
}

// TestRepeatedQueryParametersAreRefused: every query parameter that the
// documents declare as one value, given twice with a valid value, is 400
// invalid_request naming it; first-wins would quietly ignore the second.
func TestRepeatedQueryParametersAreRefused(t *testing.T) {
	ts := newTestServer(t, withEvents(t))
	ts.do(http.MethodPost, "/categories", `{"name":"dogs"}`).wantStatus(http.StatusCreated)
	// Webhook 1, whose deliveries take a cursor.
	ts.adminDo(http.MethodPost, "/admin/webhooks", `{"url":"`+webhooktest.Start(t, webhooktest.Options{}).URL+`","events":["*"]}`).wantStatus(http.StatusCreated)
	h := http.Header{"X-Api-Key": {ts.apiKey}, "Authorization": {"Bearer " + ts.admin}}
	pub, admin := specs(t)
	n := 0
	for _, d := range []*specDoc{pub, admin} {
		for _, path := range d.doc.Paths.InMatchingOrder() {
			item := d.doc.Paths.Value(path)
			for method, op := range item.Operations() {
				if op.RequestBody != nil {
					continue
				}
				target := strings.NewReplacer("{petId}", "1", "{categoryId}", "1", "{orderId}", "1", "{id}", "1", "{name}", "shop.example.com").Replace(path)
				for _, p := range slices.Concat(item.Parameters, op.Parameters) {
					v := p.Value
					if v.In != "query" || v.Schema.Value.Type.Is(openapi3.TypeArray) {
						continue
					}
					value := validValue(t, v.Schema.Value)
					q := url.Values{v.Name: {value, value}}
					res := ts.with(t).send(method, target+"?"+q.Encode(), "", h.Clone())
					if res.status != http.StatusBadRequest || !strings.Contains(res.message(), `"`+v.Name+`"`) {
						t.Errorf("%s %s?%s: %d %s; want 400 naming %s", method, target, q.Encode(), res.status, res.body, v.Name)
					}
					n++
					if v.Name == "cursor" {
						continue // once, it must be one the service issued
					}
					// Once is fine.
					ts.with(t).send(method, target+"?"+v.Name+"="+url.QueryEscape(value), "", h.Clone()).wantStatus(http.StatusOK)
				}
			}
		}
	}
	if n < 5 {
		t.Fatalf("only %d query parameters found", n)
	}
}

// validValue is a value a parameter's schema accepts.
func validValue(t *testing.T, s *openapi3.Schema) string {
	t.Helper()
	switch {
	case len(s.Enum) > 0:
		return s.Enum[0].(string)
	case s.Type.Is(openapi3.TypeInteger):
		return "1"
	case s.Type.Is(openapi3.TypeBoolean):
		return "true"
	case s.Type.Is(openapi3.TypeString) && s.Example != nil:
		return s.Example.(string) // a form of its own (an event id)
	case s.Type.Is(openapi3.TypeString):
		return "AAAAAAAAAAA" // a cursor's alphabet
	}
	t.Fatalf("no valid value known for a %v parameter", s.Type)
	return ""
}

// TestValidationMessages pins the message of every case of issue 21's list
// and their neighbours: integers named with the field's own range (not the
// Go format's), fractions and exponents told in words, one message for one
// overflow however it is written, bounds in digits, dates with a human
// hint, every missing required field in one message, and nothing shaped
// like a regular expression.
func TestValidationMessages(t *testing.T) {
	ts := newTestServer(t)
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201)
	ts.do("POST", "/pets", `{"name":"Rex","categoryId":1}`).wantStatus(201)
	const (
		quantity = `body.quantity: must be a whole number from 1 to 10000`
		noFrac   = `, written in digits only: no fraction, no exponent`
		petID    = `body.petId: must be a whole number from 1 to 9223372036854775807`
		category = `body.categoryId: must be a whole number from 1 to 9223372036854775807`
		dateTime = `body.shipDate: must be a date-time in RFC 3339, for example 2026-12-01T10:00:00Z`
	)
	for _, c := range []struct{ method, path, body, message string }{
		// An exponent, beyond the range of the field and of int64.
		{"POST", "/store/orders", `{"petId":1,"quantity":1e30}`, quantity + noFrac},
		{"POST", "/store/orders", `{"petId":1,"quantity":99999999999999999999}`, quantity},
		{"POST", "/store/orders", `{"petId":1,"quantity":2147483648}`, quantity},
		{"POST", "/store/orders", `{"petId":1,"quantity":20000}`, quantity},
		{"POST", "/store/orders", `{"petId":1,"quantity":0}`, quantity},
		{"POST", "/store/orders", `{"petId":1,"quantity":1.5}`, quantity + noFrac},
		{"POST", "/store/orders", `{"petId":1,"quantity":2.0}`, quantity + noFrac},
		{"POST", "/store/orders", `{"petId":1,"quantity":1e2}`, quantity + noFrac},
		{"POST", "/store/orders", `{"petId":1,"quantity":"2"}`, quantity},
		// One overflow, one message, however it is written.
		{"POST", "/store/orders", `{"petId":99999999999999999999}`, petID},
		{"POST", "/store/orders", `{"petId":9223372036854775808}`, petID},
		{"POST", "/store/orders", `{"petId":1e30}`, petID + noFrac},
		// 1.0 is not "beyond int64": it is written with a fraction.
		{"POST", "/pets", `{"name":"a","categoryId":1.0}`, category + noFrac},
		{"POST", "/pets", `{"name":"a","categoryId":0}`, category},
		{"POST", "/pets", `{"name":"a","categoryId":"1"}`, category},
		// Bounds in digits, not 1e+06.
		{"PUT", "/store/inventory/1", `{"quantity":2000000}`, `body.quantity: must be a whole number from 0 to 1000000`},
		{"PUT", "/store/inventory/1", `{"quantity":-1}`, `body.quantity: must be a whole number from 0 to 1000000`},
		// Dates: a hint and an example, no regular expression.
		{"POST", "/store/orders", `{"petId":1,"shipDate":"tomorrow"}`, dateTime},
		{"POST", "/store/orders", `{"petId":1,"shipDate":"2026-13-01T00:00:00Z"}`, dateTime},
		{"POST", "/store/orders", `{"petId":1,"shipDate":5}`, dateTime},
		// Every missing required field, in one message.
		{"POST", "/pets", `{}`, `body: missing the required fields "name" and "categoryId"`},
		{"POST", "/pets", `{"categoryId":1}`, `body: missing the required field "name"`},
		{"POST", "/store/orders", `{}`, `body: missing the required field "petId"`},
		{"PUT", "/store/inventory/1", `{}`, `body: missing the required field "quantity"`},
		// Strings and enums.
		{"POST", "/pets", `{"name":"","categoryId":1}`, `body.name: must not be empty`},
		{"POST", "/pets", `{"name":"a","categoryId":1,"status":"lost"}`, `body.status: must be one of available, pending, sold`},
		{"POST", "/categories", `{"name":"x","description":5}`, `body.description: must be a string`},
		// null is no value of any field: the words of its type.
		{"POST", "/pets", `{"name":null,"categoryId":1}`, `body.name: must be a string`},
		{"POST", "/categories", `{"name":"x","description":null}`, `body.description: must be a string`},
		{"POST", "/store/orders", `{"petId":1,"shipDate":null}`, dateTime},
		{"PUT", "/store/orders/1", `{"complete":null}`, `body.complete: must be true or false`},
		// Parameters: the same words.
		{"GET", "/pets?limit=1.5", "", `query parameter "limit": must be a whole number from 1 to 100` + noFrac},
		{"GET", "/pets?limit=1e2", "", `query parameter "limit": must be a whole number from 1 to 100` + noFrac},
		{"GET", "/pets?limit=1000", "", `query parameter "limit": must be a whole number from 1 to 100`},
		{"GET", "/pets?categoryId=99999999999999999999", "", `query parameter "categoryId": must be a whole number from 1 to 9223372036854775807`},
		{"GET", "/pets/1.0", "", `path parameter "petId": must be a whole number from 1 to 9223372036854775807` + noFrac},
		{"GET", "/pets?status=lost", "", `query parameter "status": must be one of available, pending, sold`},
		{"GET", "/store/orders?complete=maybe", "", `query parameter "complete": must be true or false`},
		{"GET", "/pets?cursor=a.b", "", `query parameter "cursor": is not in the form this field takes (see its description in the API reference)`},
		// An id of several that does not parse: the words of one id.
		{"GET", "/pets?id=abc", "", `query parameter "id": must be a whole number from 1 to 9223372036854775807`},
		{"GET", "/pets?id=1&id=1e2", "", `query parameter "id": must be a whole number from 1 to 9223372036854775807` + noFrac},
		{"GET", "/pets?id=1,2", "", `query parameter "id": must be a whole number from 1 to 9223372036854775807`},
		{"GET", "/pets?id=99999999999999999999", "", `query parameter "id": must be a whole number from 1 to 9223372036854775807`},
		{"GET", "/pets?id=0", "", `query parameter "id": must be a whole number from 1 to 9223372036854775807`},
		{"GET", "/pets?id=1&id=-1", "", `query parameter "id": must be a whole number from 1 to 9223372036854775807`},
	} {
		res := ts.do(c.method, c.path, c.body)
		if res.status != 400 || res.message() != c.message {
			t.Errorf("%s %s %s:\n got %d %q\nwant 400 %q", c.method, c.path, c.body, res.status, res.message(), c.message)
		}
	}
}
