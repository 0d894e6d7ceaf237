package handlers_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"petstore/store/postgres/pgtest"
)

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
	ts.adminDo(http.MethodPost, "/admin/webhooks", `{"url":"`+newHookReceiver(t).srv.URL+`","events":["*"]}`).wantStatus(http.StatusCreated)
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
