package handlers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"
)

// testCredential is the one credential testAuth accepts, for every scheme.
const testCredential = "good"

// testAuth stands in for Server.authenticate: both the quick check and the
// validator get it, as in the server.
func testAuth(r *http.Request, scheme string) bool {
	switch scheme {
	case schemeAPIKey:
		return r.Header.Get(headerAPIKey) == testCredential
	case schemeAdminToken:
		return bearerToken(r.Header.Get(echo.HeaderAuthorization)) == testCredential
	}
	return false
}

func testValidatorOptions() *openapi3filter.Options {
	return &openapi3filter.Options{
		AuthenticationFunc: func(_ context.Context, in *openapi3filter.AuthenticationInput) error {
			if testAuth(in.RequestValidationInput.Request, in.SecuritySchemeName) {
				return nil
			}
			return errBadCredentials
		},
		SkipSettingDefaults:               true,
		RejectWhenRequestBodyNotSpecified: true,
	}
}

// quickOps returns every operation of both documents with its quick check
// (nil when it has none), by route key.
func quickOps(t testing.TB) (map[string]*routers.Route, map[string]*quickCheck) {
	t.Helper()
	public, err := os.ReadFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ops, checks := map[string]*routers.Route{}, map[string]*quickCheck{}
	for _, spec := range [][]byte{public, adminSpec} {
		doc, err := loadDoc(spec)
		if err != nil {
			t.Fatal(err)
		}
		for key, op := range doc.ops {
			ops[key] = op
			checks[key] = newQuickCheck(op, testValidatorOptions())
		}
	}
	return ops, checks
}

// quickRequest is one request as both checks see it.
type quickRequest struct {
	op         *routers.Route
	pathValue  string
	credential string
	// header is the value of each optional header parameter, when not "".
	header string
}

func (qr quickRequest) build(q *quickCheck) (*http.Request, echo.Context, map[string]string) {
	path := qr.op.Path
	params := map[string]string{}
	var names, vals []string
	for _, p := range q.params {
		path = strings.ReplaceAll(path, "{"+p.name+"}", qr.pathValue)
		params[p.name] = qr.pathValue
		names, vals = append(names, p.name), append(vals, qr.pathValue)
	}
	req := httptest.NewRequest(qr.op.Method, "http://localhost/", nil)
	req.URL.Path = path
	req.Header.Set(headerAPIKey, qr.credential)
	req.Header.Set(echo.HeaderAuthorization, "Bearer "+qr.credential)
	if qr.header != "" {
		for _, h := range q.headers {
			req.Header.Set(h.name, qr.header)
		}
	}
	c := echo.New().NewContext(req, httptest.NewRecorder())
	c.SetParamNames(names...)
	c.SetParamValues(vals...)
	return req, c, params
}

// agree fails the test if the quick check passes qr while the validator
// refuses it. It reports whether the quick check passed it.
func (qr quickRequest) agree(t testing.TB, q *quickCheck) bool {
	t.Helper()
	_, c, params := qr.build(q)
	if !q.passes(c) {
		return false
	}
	fresh, _, _ := qr.build(q)
	err := openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
		Request: fresh, PathParams: params, Route: qr.op, Options: testValidatorOptions(),
	})
	if err != nil {
		t.Errorf("%s %s %q: the quick check passes it, the validator says %v", qr.op.Method, qr.op.Path, qr.pathValue, err)
	}
	return true
}

// TestQuickCheckAgreesWithValidator sends each operation that has a quick
// check a range of awkward parameter values, and fails if the
// quick check lets through a request the validator refuses. (The check may
// send more to the validator than needed; that costs time, not
// correctness.)
func TestQuickCheckAgreesWithValidator(t *testing.T) {
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
	ops, checks := quickOps(t)
	passed := map[string]bool{}
	for key, q := range checks {
		if q == nil {
			continue
		}
		for _, v := range values {
			qr := quickRequest{op: ops[key], pathValue: v, credential: testCredential}
			if qr.agree(t, q) {
				passed[key] = true
			}
		}
		// Optional headers (If-Match, If-None-Match) of every length around
		// their bounds, and text that is not UTF-8.
		for _, h := range []string{`"3"`, "*", `W/"1", "2"`, strings.Repeat("x", 1024), strings.Repeat("é", 1024), strings.Repeat("x", 1025), "\xff\xfe"} {
			quickRequest{op: ops[key], pathValue: "7", credential: testCredential, header: h}.agree(t, q)
		}
	}
	// Not vacuous: the hot operations pass their plain requests.
	for _, want := range []string{
		"GET /pets/:petId", "GET /categories/:categoryId", "GET /store/orders/:orderId",
		"DELETE /pets/:petId", "DELETE /categories/:categoryId",
	} {
		if !passed[want] {
			var got []string
			for k := range passed {
				got = append(got, k)
			}
			slices.Sort(got)
			t.Errorf("%s: no request passed its quick check (passed: %v)", want, got)
		}
	}
}

// TestQuickCheckDefersOnAnythingElse: a query string, a body, a value
// outside plain decimals, an operation that takes a body, or a missing or
// wrong credential goes to the validator.
func TestQuickCheckDefersOnAnythingElse(t *testing.T) {
	_, checks := quickOps(t)
	get := checks["GET /pets/:petId"]
	e := echo.New()
	try := func(q *quickCheck, method, target, body, value string, header http.Header) bool {
		var req *http.Request
		if body == "" {
			req = httptest.NewRequest(method, target, nil)
		} else {
			req = httptest.NewRequest(method, target, strings.NewReader(body))
		}
		for k, v := range header {
			req.Header[k] = v
		}
		c := e.NewContext(req, httptest.NewRecorder())
		if value != "" {
			c.SetParamNames("petId")
			c.SetParamValues(value)
		}
		return q.passes(c)
	}
	if !try(get, "GET", "/pets/7", "", "7", nil) {
		t.Error("a plain GET /pets/7 does not pass")
	}
	for _, tc := range []struct{ target, body, value string }{
		{"/pets/7?x=1", "", "7"},
		{"/pets/7", "{}", "7"},
		{"/pets/0", "", "0"}, // below the schema's minimum of 1
		{"/pets/07", "", "07"},
		{"/pets/x", "", "x"},
	} {
		if try(get, "GET", tc.target, tc.body, tc.value, nil) {
			t.Errorf("%s (body %q) passes the quick check; it should go to the validator", tc.target, tc.body)
		}
	}

	if checks["POST /pets"] != nil || checks["PUT /categories/:categoryId"] != nil {
		t.Error("an operation that takes a body has a quick check: bodies are the validator's")
	}
	del := checks["DELETE /pets/:petId"]
	for name, h := range map[string]http.Header{
		"no credential":      {},
		"a wrong credential": {"X-Api-Key": {"bad"}},
	} {
		if try(del, "DELETE", "/pets/7", "", "7", h) {
			t.Errorf("DELETE /pets/7 with %s passes the quick check; it should go to the validator", name)
		}
	}
	if !try(del, "DELETE", "/pets/7", "", "7", http.Header{"X-Api-Key": {testCredential}}) {
		t.Error("a plain DELETE /pets/7 does not pass")
	}
}
