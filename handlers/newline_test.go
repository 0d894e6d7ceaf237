package handlers_test

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"

	"petstore/store"
)

// TestEveryJSONAnswerEndsWithOneNewline: Echo's c.JSON ends a document
// with a newline, so every JSON answer does, whichever helper wrote it:
// POST answers, PUT answers, single reads (the pet sent as the store
// keeps it), lists, admin answers and Error bodies.
func TestEveryJSONAnswerEndsWithOneNewline(t *testing.T) {
	ts, cat, pet := newServerWithRex(t, 3)
	var order store.Order
	placed := ts.do("POST", "/store/orders", fmt.Sprintf(`{"petId":%d}`, pet.ID)).wantStatus(201)
	placed.decode(&order)
	answers := map[string]*response{
		"POST /categories":             ts.do("POST", "/categories", `{"name":"cats"}`).wantStatus(201),
		"POST /pets":                   ts.do("POST", "/pets", fmt.Sprintf(`{"name":"Tom","categoryId":%d}`, cat.ID)).wantStatus(201),
		"POST /store/orders":           placed,
		"PUT /pets/{id}":               ts.do("PUT", fmt.Sprintf("/pets/%d", pet.ID), fmt.Sprintf(`{"name":"Rex","categoryId":%d}`, cat.ID)).wantStatus(200),
		"PUT /categories/{id}":         ts.do("PUT", fmt.Sprintf("/categories/%d", cat.ID), `{"name":"dogs"}`).wantStatus(200),
		"PUT /store/inventory/{id}":    ts.do("PUT", fmt.Sprintf("/store/inventory/%d", pet.ID), `{"quantity":4}`).wantStatus(200),
		"PUT /store/orders/{id}":       ts.do("PUT", fmt.Sprintf("/store/orders/%d", order.ID), `{"complete":true}`).wantStatus(200),
		"GET /pets/{id}":               ts.do("GET", fmt.Sprintf("/pets/%d", pet.ID), "").wantStatus(200),
		"GET /pets?id=":                ts.do("GET", fmt.Sprintf("/pets?id=%d", pet.ID), "").wantStatus(200),
		"GET /pets":                    ts.do("GET", "/pets", "").wantStatus(200),
		"GET /categories/{id}":         ts.do("GET", fmt.Sprintf("/categories/%d", cat.ID), "").wantStatus(200),
		"GET /store/inventory":         ts.do("GET", "/store/inventory", "").wantStatus(200),
		"GET /admin/project":           ts.adminDo("GET", "/admin/project", "").wantStatus(200),
		"POST /admin/api-keys":         ts.adminDo("POST", "/admin/api-keys", `{"name":"another"}`).wantStatus(201),
		"404 Error":                    ts.do("GET", "/pets/999999", "").wantStatus(404),
		"400 Error":                    ts.do("POST", "/pets", `{"name":`).wantStatus(400),
		"422 Error":                    ts.do("POST", "/pets", `{"name":"Rex","categoryId":999}`).wantStatus(422),
		"412 Error":                    ts.send("PUT", fmt.Sprintf("/pets/%d", pet.ID), fmt.Sprintf(`{"name":"Rex","categoryId":%d}`, cat.ID), http.Header{"X-API-Key": {ts.apiKey}, "If-Match": {`"99"`}}).wantStatus(412),
		"401 Error":                    ts.send("POST", "/pets", `{"name":"Rex"}`, http.Header{}).wantStatus(401),
		"404 Error of an unknown path": ts.do("GET", "/nowhere", "").wantStatus(404),
	}
	for name, r := range answers {
		if !bytes.HasSuffix(r.body, []byte("}\n")) && !bytes.HasSuffix(r.body, []byte("]\n")) {
			t.Errorf("%s: the answer does not end with one newline after the document: %q", name, r.body)
		}
	}
}
