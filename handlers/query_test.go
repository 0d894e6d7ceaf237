package handlers_test

import (
	"net/http"
	"strings"
	"testing"
)

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
