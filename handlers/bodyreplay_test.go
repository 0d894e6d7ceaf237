package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"petstore/domains"
	"petstore/domains/dnscheck"
)

// bodyOperation is an operation of either document that takes a JSON body,
// with a request target that reaches it.
type bodyOperation struct {
	doc          *specDoc
	method, path string // path: the spec's, with parameters filled in
	op           *openapi3.Operation
}

// bodyOperations lists every operation that takes a JSON body, in a fixed
// order, path parameters set to 1 (or a domain name).
func bodyOperations(tb testing.TB) []bodyOperation {
	tb.Helper()
	pub, admin := specs(tb)
	var out []bodyOperation
	for _, d := range []*specDoc{pub, admin} {
		for _, path := range d.doc.Paths.InMatchingOrder() {
			for method, op := range d.doc.Paths.Value(path).Operations() {
				if op.RequestBody == nil || op.RequestBody.Value.Content[echoJSON] == nil {
					continue
				}
				target := path
				for _, p := range op.Parameters {
					target = strings.ReplaceAll(target, "{"+p.Value.Name+"}", "1")
				}
				target = strings.ReplaceAll(target, "{name}", "shop.example.com")
				for _, p := range d.doc.Paths.Value(path).Parameters {
					target = strings.ReplaceAll(target, "{"+p.Value.Name+"}", "1")
				}
				out = append(out, bodyOperation{doc: d, method: method, path: target, op: op})
			}
		}
	}
	slices.SortFunc(out, func(a, b bodyOperation) int { return strings.Compare(a.method+a.path, b.method+b.path) })
	return out
}

const echoJSON = "application/json"

// TestBodiesFollowTheValidator replays, on every operation that takes a
// JSON body, its example and a set of awkward bodies (what the body
// scanner's differential fuzz test started from, when the service had a
// scanner of its own: boundary lengths and numbers, escapes, invalid
// UTF-8, repeated and unknown members, malformed documents), and holds the
// server to kin-openapi's verdict on each: what the validator refuses is
// 400 invalid_request, and what it accepts is answered as the spec says
// (the harness checks every answer), never with a 5xx.
func TestBodiesFollowTheValidator(t *testing.T) {
	ts := newTestServer(t, withDomains(t, domains.Config{
		// DNS answered by nothing (a closed loopback port): offline.
		Checker: &dnscheck.Checker{Resolvers: []string{"127.0.0.1:9"}, Timeout: 100 * time.Millisecond},
	}))
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201)
	ts.do("POST", "/pets", `{"name":"Rex","categoryId":1}`).wantStatus(201)
	opts := &openapi3filter.Options{
		AuthenticationFunc:                openapi3filter.NoopAuthenticationFunc,
		SkipSettingDefaults:               true,
		RejectWhenRequestBodyNotSpecified: true,
	}
	refused, accepted := 0, 0
	for _, bo := range bodyOperations(t) {
		bodies := append([][]byte{exampleBody(t, bo.op)}, awkwardBodies(t, bo.op)...)
		for _, body := range bodies {
			req := httptest.NewRequest(bo.method, bo.path, bytes.NewReader(body))
			req.Header.Set("Content-Type", echoJSON)
			route, params, err := bo.doc.router.FindRoute(req)
			if err != nil {
				t.Fatalf("%s %s: %v", bo.method, bo.path, err)
			}
			verdict := openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
				Request: req, PathParams: params, Route: route, Options: opts,
			})
			h := http.Header{"Content-Type": {echoJSON}, "X-Api-Key": {ts.apiKey}, "Authorization": {"Bearer " + ts.admin}}
			res := ts.with(t).request(bo.method, bo.path, bytes.NewReader(body), h)
			if verdict != nil {
				refused++
				if res.status != http.StatusBadRequest {
					t.Errorf("%s %s with body %q: the validator refuses it (%v), the server answers %d: %s", bo.method, bo.path, body, verdict, res.status, res.body)
				}
				continue
			}
			accepted++
			if res.status >= 500 {
				t.Errorf("%s %s with body %q -> %d: %s", bo.method, bo.path, body, res.status, res.body)
			}
		}
	}
	// Not vacuous: both verdicts occur.
	if refused == 0 || accepted == 0 {
		t.Errorf("the validator refused %d bodies and accepted %d; the set should hold both", refused, accepted)
	}
}

// exampleBody is the operation's request body example, or one made of the
// schema's property examples, without read-only members.
func exampleBody(tb testing.TB, op *openapi3.Operation) []byte {
	tb.Helper()
	mt := op.RequestBody.Value.Content[echoJSON]
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
		tb.Fatal(err)
	}
	return b
}

// awkwardBodies are the operation's example body with each property in
// turn given awkward values, plus malformed and surprising documents.
func awkwardBodies(tb testing.TB, op *openapi3.Operation) [][]byte {
	tb.Helper()
	base := exampleBody(tb, op)
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
		tb.Fatal(err)
	}
	names := []string{"id", "unknown", "Name"}
	for name := range op.RequestBody.Value.Content[echoJSON].Schema.Value.Properties {
		names = append(names, name)
	}
	slices.Sort(names[3:])
	for _, name := range names {
		rest := withoutMember(tb, obj, name)
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
func withoutMember(tb testing.TB, obj map[string]any, name string) string {
	tb.Helper()
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
			tb.Fatal(err)
		}
		fmt.Fprintf(&b, `,%q:%s`, k, v)
	}
	return b.String()
}
