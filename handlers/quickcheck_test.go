package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// testAuth stands in for Server.credentialOK: both the quick check and the
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
	op          *routers.Route
	pathValue   string
	body        []byte
	contentType string
	credential  string
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
	var body io.Reader
	if qr.body != nil {
		body = bytes.NewReader(qr.body)
	}
	req := httptest.NewRequest(qr.op.Method, "http://localhost/", body)
	req.URL.Path = path
	if qr.contentType != "" {
		req.Header.Set(echo.HeaderContentType, qr.contentType)
	}
	req.Header.Set(headerAPIKey, qr.credential)
	req.Header.Set(echo.HeaderAuthorization, "Bearer "+qr.credential)
	c := echo.New().NewContext(req, httptest.NewRecorder())
	c.SetParamNames(names...)
	c.SetParamValues(vals...)
	return req, c, params
}

// agree fails the test if the quick check passes qr while the validator
// refuses it, or passes a body that decodeBody's own checks would refuse.
// It reports whether the quick check passed it.
func (qr quickRequest) agree(t testing.TB, q *quickCheck) bool {
	t.Helper()
	req, c, params := qr.build(q)
	if !q.passes(c) {
		// Whatever was read must be handed on unchanged.
		if qr.body != nil {
			got, err := io.ReadAll(req.Body)
			if err != nil || !bytes.Equal(got, qr.body) {
				t.Fatalf("%s %s: after the quick check the body reads %q (%v), not %q", qr.op.Method, qr.op.Path, got, err, qr.body)
			}
		}
		return false
	}
	if _, ok := req.Body.(*checkedBody); qr.body != nil && !ok {
		t.Fatalf("%s %s: a body passed, but is not handed on as checked", qr.op.Method, qr.op.Path)
	}
	fresh, _, _ := qr.build(q)
	err := openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
		Request: fresh, PathParams: params, Route: qr.op, Options: testValidatorOptions(),
	})
	if err != nil {
		t.Errorf("%s %s %q with body %q: the quick check passes it, the validator says %v", qr.op.Method, qr.op.Path, qr.pathValue, qr.body, err)
	}
	if qr.body != nil {
		// decodeBody's own checks, as they run when the quick check has not
		// passed the body (one value only, valid UTF-8, no repeated member).
		plain := httptest.NewRequest(qr.op.Method, "/", bytes.NewReader(qr.body))
		var v any
		if err := decodeBody(echo.New().NewContext(plain, httptest.NewRecorder()), &v); err != nil {
			t.Errorf("%s %s with body %q: the quick check passes it, decodeBody would say %v", qr.op.Method, qr.op.Path, qr.body, err)
		}
	}
	return true
}

// TestQuickCheckAgreesWithValidator sends each operation that has a quick
// check a range of awkward parameter values and bodies, and fails if the
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
		op := ops[key]
		var body []byte
		if q.body != nil {
			body = exampleBody(t, op)
		}
		for _, v := range values {
			qr := quickRequest{op: op, pathValue: v, body: body, contentType: echo.MIMEApplicationJSON, credential: testCredential}
			if qr.agree(t, q) {
				passed[key] = true
			}
		}
		if q.body == nil {
			continue
		}
		for _, b := range awkwardBodies(t, op) {
			qr := quickRequest{op: op, pathValue: "7", body: b, contentType: echo.MIMEApplicationJSON, credential: testCredential}
			qr.agree(t, q)
		}
	}
	// Not vacuous: the hot operations pass their plain requests.
	for _, want := range []string{
		"GET /pets/:petId", "GET /categories/:categoryId", "GET /store/orders/:orderId",
		"POST /pets", "PUT /pets/:petId", "POST /categories", "PUT /categories/:categoryId",
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

// exampleBody is the operation's request body example, or one made of the
// schema's property examples.
func exampleBody(t testing.TB, op *routers.Route) []byte {
	t.Helper()
	mt := op.Operation.RequestBody.Value.Content[echo.MIMEApplicationJSON]
	ex := mt.Example
	if ex == nil {
		ex = mt.Schema.Value.Example
	}
	if ex == nil {
		obj := map[string]any{}
		for name, p := range mt.Schema.Value.Properties {
			if p.Value.Example != nil && !p.Value.ReadOnly {
				obj[name] = p.Value.Example
			}
		}
		ex = obj
	}
	if m, ok := ex.(map[string]any); ok {
		for name, p := range mt.Schema.Value.Properties {
			if p.Value.ReadOnly {
				delete(m, name)
			}
		}
	}
	b, err := json.Marshal(ex)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// awkwardBodies are the operation's example body with each property in
// turn given awkward values, plus malformed and surprising documents.
func awkwardBodies(t testing.TB, op *routers.Route) [][]byte {
	t.Helper()
	base := exampleBody(t, op)
	long := strings.Repeat("x", 99)
	vals := []string{
		`""`, `"a"`, `" "`, `"` + long + `"`, `"` + long + `x"`, `"` + long + `xx"`, `"` + strings.Repeat("x", 1000) + `"`, `"` + strings.Repeat("x", 1001) + `"`,
		`"` + long + `é"`, `"` + long + `😀"`, `"` + strings.Repeat("😀", 50) + `"`, `"` + strings.Repeat("😀", 51) + `"`, `"` + strings.Repeat("😀", 100) + `"`, `"` + strings.Repeat("😀", 101) + `"`,
		`"a\"b"`, `"\u0041"`, `"\ud800"`, "\"a\x01b\"", "\"\xff\"", "\"\xed\xa0\x80\"",
		`"available"`, `"pending"`, `"sold"`, `"Sold"`, `"available "`, `"2026-12-01T10:00:00Z"`, `"not a date"`,
		`0`, `1`, `-1`, `-0`, `01`, `1.0`, `1.5`, `1e2`, `1E2`, `10000`, `10001`, `2147483647`, `2147483648`, `-2147483649`,
		`999999999999999`, `1000000000000000`, `9223372036854775807`, `9223372036854775808`, `-9223372036854775809`,
		`true`, `false`, `null`, `[]`, `[1]`, `{}`, `{"a":1}`, `tru`, `"`, `--1`, `- 1`,
	}
	var out [][]byte
	var obj map[string]any
	if err := json.Unmarshal(base, &obj); err != nil {
		t.Fatal(err)
	}
	names := []string{"id", "unknown", "Name"}
	for name := range op.Operation.RequestBody.Value.Content[echo.MIMEApplicationJSON].Schema.Value.Properties {
		names = append(names, name)
	}
	for _, name := range names {
		rest := withoutMember(t, obj, name)
		for _, v := range vals {
			member := `"` + name + `":` + v
			out = append(out, []byte(`{`+member+rest+`}`), []byte(`{`+strings.TrimPrefix(rest, ",")+sep(rest)+member+`}`))
		}
		out = append(out, []byte(`{`+strings.TrimPrefix(rest, ",")+`}`))                     // without it
		out = append(out, []byte(`{"`+name+`":1,"`+name+`":"a"`+rest+`}`))                   // twice
		out = append(out, []byte(`{"`+name+`":"a","`+name+`":"a"`+rest+`}`))                 // twice, same
		out = append(out, []byte(`{"`+name+`" : "x"`+rest+` }`+"\n"), []byte(`{"`+name+`"`)) // spaced, cut
	}
	out = append(out,
		base, []byte(" \t\r\n"+string(base)+" \n"), append([]byte("\xef\xbb\xbf"), base...),
		append(slices.Clone(base), []byte(" {}")...), append(slices.Clone(base), 'x'), base[:len(base)-1],
		[]byte(`{}`), []byte(`[]`), []byte(`null`), []byte(`"x"`), []byte(`1`), []byte(``), []byte(`{`), []byte(`{,}`),
		[]byte(`{"name":"a",}`), []byte(`{"name" "a"}`), []byte(`{'name':'a'}`), []byte(`{"name":"a"}{"name":"b"}`),
	)
	return out
}

func sep(rest string) string {
	if rest == "" {
		return ""
	}
	return ","
}

// withoutMember renders obj's other members as `,"k":v,...` (empty when
// there are none), in a fixed order.
func withoutMember(t testing.TB, obj map[string]any, name string) string {
	t.Helper()
	var keys []string
	for k := range obj {
		if k != name {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		v, err := json.Marshal(obj[k])
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, `,%q:%s`, k, v)
	}
	return b.String()
}

// FuzzQuickBody: no body the quick check passes may be refused by the
// validator or by decodeBody's own checks, on any operation that has a
// body check.
func FuzzQuickBody(f *testing.F) {
	ops, checks := quickOps(f)
	var keys []string
	for key, q := range checks {
		if q != nil && q.body != nil {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	for i, key := range keys {
		f.Add(uint8(i), exampleBody(f, ops[key]))
		for _, b := range awkwardBodies(f, ops[key])[:40] {
			f.Add(uint8(i), b)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		key := keys[int(which)%len(keys)]
		quickRequest{op: ops[key], pathValue: "7", body: body, contentType: echo.MIMEApplicationJSON, credential: testCredential}.agree(t, checks[key])
	})
}

// TestQuickCheckDefersOnAnythingElse: a query string, a body where none is
// taken, a value outside plain decimals, a missing credential, another
// media type or encoding, or a body of unknown length goes to the
// validator, with the body as it was sent.
func TestQuickCheckDefersOnAnythingElse(t *testing.T) {
	ops, checks := quickOps(t)
	get, post := checks["GET /pets/:petId"], checks["POST /pets"]
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

	const pet = `{"name":"Rex","categoryId":1}`
	good := http.Header{"Content-Type": {"application/json"}, "X-Api-Key": {testCredential}}
	with := func(k, v string) http.Header {
		h := good.Clone()
		if v == "" {
			h.Del(k)
		} else {
			h.Set(k, v)
		}
		return h
	}
	if !try(post, "POST", "/pets", pet, "", good) {
		t.Error("a plain POST /pets does not pass")
	}
	for name, h := range map[string]http.Header{
		"no credential":      with("X-Api-Key", ""),
		"a wrong credential": with("X-Api-Key", "bad"),
		"no Content-Type":    with("Content-Type", ""),
		"a charset":          with("Content-Type", "application/json; charset=utf-8"),
		"another media type": with("Content-Type", "text/plain"),
		"a Content-Encoding": with("Content-Encoding", "identity"),
	} {
		if try(post, "POST", "/pets", pet, "", h) {
			t.Errorf("POST /pets with %s passes the quick check; it should go to the validator", name)
		}
	}

	// A body of unknown length is not read at all.
	req := httptest.NewRequest("POST", "/pets", io.MultiReader(strings.NewReader(pet)))
	req.ContentLength = -1
	req.Header = good.Clone()
	body := req.Body
	if post.passes(e.NewContext(req, httptest.NewRecorder())) || req.Body != body {
		t.Error("a chunked body was read or passed")
	}

	// A body whose reading fails reaches the validator with the same bytes
	// and the same error.
	broken := errors.New("connection reset")
	req = httptest.NewRequest("POST", "/pets", io.MultiReader(strings.NewReader(pet[:5]), errReader{broken}))
	req.ContentLength = int64(len(pet))
	req.Header = good.Clone()
	if post.passes(e.NewContext(req, httptest.NewRecorder())) {
		t.Error("a body that could not be read passed")
	}
	got, err := io.ReadAll(req.Body)
	if string(got) != pet[:5] || !errors.Is(err, broken) {
		t.Errorf("after a failed read the validator would read %q, %v; want %q, %v", got, err, pet[:5], broken)
	}

	// An operation whose body schema uses a format passes bodies without
	// that property, and leaves those with it to the validator.
	orders := checks["POST /store/orders"]
	qr := quickRequest{op: ops["POST /store/orders"], body: []byte(`{"petId":7,"quantity":2}`), contentType: echo.MIMEApplicationJSON, credential: testCredential}
	if !qr.agree(t, orders) {
		t.Error(`POST /store/orders {"petId":7,"quantity":2} does not pass`)
	}
	qr.body = []byte(`{"petId":7,"shipDate":"2026-12-01T10:00:00Z"}`)
	if qr.agree(t, orders) {
		t.Error("POST /store/orders with a shipDate passes the quick check, which does not know date-time")
	}
}
