package handlers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
)

// TestQuickCheckAgreesWithValidator sends each operation that has a quick
// check a range of awkward parameter values, and fails if the quick check
// lets through a request the validator refuses. (The check may send more to
// the validator than needed; that costs time, not correctness.)
func TestQuickCheckAgreesWithValidator(t *testing.T) {
	public, err := os.ReadFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	values := []string{
		"0", "1", "7", "01", "+1", "-1", "1.0", "1e3", "0x10", " 1", "1 ", "", "a", "１",
		"2147483647", "2147483648", "4294967296", "9007199254740991", "9007199254740993",
		"999999999999999", "1000000000000000", "9223372036854775807", "9223372036854775808",
		"99999999999999999999",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		values = append(values, fmt.Sprint(rng.Int64N(1<<rng.IntN(63))))
	}
	eligible := map[string]bool{}
	for _, spec := range [][]byte{public, adminSpec} {
		doc, err := loadDoc(spec)
		if err != nil {
			t.Fatal(err)
		}
		for key, op := range doc.ops {
			q := newQuickCheck(op)
			if q == nil {
				continue
			}
			eligible[key] = true
			e := echo.New()
			for _, v := range values {
				path := op.Path
				params := map[string]string{}
				var names, vals []string
				for _, p := range q.params {
					path = strings.ReplaceAll(path, "{"+p.name+"}", v)
					params[p.name] = v
					names, vals = append(names, p.name), append(vals, v)
				}
				req := httptest.NewRequest(op.Method, "http://localhost/", nil)
				req.URL.Path = path
				c := e.NewContext(req, httptest.NewRecorder())
				c.SetParamNames(names...)
				c.SetParamValues(vals...)
				if !q.passes(c) {
					continue
				}
				err := openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
					Request: req, PathParams: params, Route: op,
					Options: &openapi3filter.Options{AuthenticationFunc: func(context.Context, *openapi3filter.AuthenticationInput) error {
						return fmt.Errorf("no credential in this test")
					}},
				})
				if err != nil {
					t.Errorf("%s %s with %q: the quick check passes it, the validator says %v", op.Method, op.Path, v, err)
				}
			}
		}
	}
	for _, want := range []string{"GET /pets/:petId", "GET /categories/:categoryId", "GET /store/orders/:orderId"} {
		if !eligible[want] {
			t.Errorf("%s has no quick check (eligible: %v)", want, eligible)
		}
	}
	for key := range eligible {
		if !strings.HasPrefix(key, http.MethodGet+" ") {
			t.Errorf("%s has a quick check, but only reads without credentials should", key)
		}
	}
}

// TestQuickCheckDefersOnAnythingElse: a query string, a body, or a value
// outside plain decimals goes to the validator.
func TestQuickCheckDefersOnAnythingElse(t *testing.T) {
	public, err := os.ReadFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := loadDoc(public)
	if err != nil {
		t.Fatal(err)
	}
	q := newQuickCheck(doc.ops["GET /pets/:petId"])
	e := echo.New()
	try := func(target, body, value string) bool {
		var req *http.Request
		if body == "" {
			req = httptest.NewRequest("GET", target, nil)
		} else {
			req = httptest.NewRequest("GET", target, strings.NewReader(body))
		}
		c := e.NewContext(req, httptest.NewRecorder())
		c.SetParamNames("petId")
		c.SetParamValues(value)
		return q.passes(c)
	}
	if !try("/pets/7", "", "7") {
		t.Error("a plain GET /pets/7 does not pass")
	}
	for _, tc := range []struct{ target, body, value string }{
		{"/pets/7?x=1", "", "7"},
		{"/pets/7", "{}", "7"},
		{"/pets/0", "", "0"}, // below the schema's minimum of 1
		{"/pets/07", "", "07"},
		{"/pets/x", "", "x"},
	} {
		if try(tc.target, tc.body, tc.value) {
			t.Errorf("%s (body %q) passes the quick check; it should go to the validator", tc.target, tc.body)
		}
	}
}
