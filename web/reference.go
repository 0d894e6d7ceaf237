package web

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// RenderReference renders the reference page of an OpenAPI 3 document as
// ParseSpec gives it; meant to run once at start.
func RenderReference(doc *openapi3.T) ([]byte, error) {
	page, err := execute(referenceTemplate, buildReference(doc))
	if err != nil {
		return nil, fmt.Errorf("rendering the reference: %w", err)
	}
	return page, nil
}

// referenceView is what the page template shows.
type referenceView struct {
	Title, Version string
	Description    template.HTML
	Sections       []heading // the description's headings, for the contents
	License        *openapi3.License
	Tags           []*tagView
	Schemas        []propView // the components, by name
}

type tagView struct {
	ID, Name    string
	Description template.HTML
	Operations  []*operationView
}

type operationView struct {
	ID, Method, Path, Summary string
	Description               template.HTML
	Stability                 string // beta, experimental
	Deprecated                bool
	DeprecatedSince, Sunset   string     // YYYY-MM-DD, when given
	Successor                 string     // what replaces a deprecated call, when given
	Auth                      []authView // empty: public
	Params                    []paramView
	Body                      *bodyView
	Responses                 []responseView
	TryIt                     *tryItView // nil: hidden by x-hideTryItPanel
	line                      int        // where the document defines it
}

type authView struct {
	Scheme      string
	Description string // e.g. "an API key in the X-API-Key header"
}

type paramView struct {
	Name, In    string
	Required    bool
	Deprecated  bool
	Description template.HTML
	Schema      *schemaView
}

type bodyView struct {
	Required    bool
	Description template.HTML
	Media       []mediaView
}

type mediaView struct {
	Type     string
	Schema   *schemaView
	Examples []exampleView
}

type exampleView struct {
	Title string
	JSON  string
}

type responseView struct {
	Status, Reason string
	Success        bool
	Description    template.HTML
	Headers        []paramView // a header is shown as a parameter is
	Media          []mediaView
}

type tryItView struct {
	Path      string // the path template to call, with the base path
	Params    []tryItParam
	Body      string // the first example, to edit
	BodyType  string
	KeyHeader string // the API key header of a write; empty for a public call
	First     *tryItFirst
}

// tryItFirst is a record the example body refers to (ExtTryItFirst), which
// the panel reads first and creates when it does not exist.
type tryItFirst struct {
	Field      string // the body's member that holds its id
	ReadPath   string // with {Field} for the id
	CreatePath string
	CreateBody string // create's first example, compact
}

type tryItParam struct {
	ID, Name, In string
	Required     bool
	Options      []string // a select's values; nil for a text field
	Placeholder  string
	InputMode    string // numeric for integers
}

func buildReference(doc *openapi3.T) *referenceView {
	v := &referenceView{}
	if doc.Info != nil {
		v.Title, v.Version, v.License = doc.Info.Title, doc.Info.Version, doc.Info.License
		v.Description, v.Sections = renderMarkdown(doc.Info.Description, 0, "section-")
	}
	// The panels call paths under the first server's path, the only part a
	// same-origin request can use.
	basePath := ""
	if len(doc.Servers) > 0 {
		if u, err := url.Parse(doc.Servers[0].URL); err == nil && !strings.Contains(doc.Servers[0].URL, "{") {
			basePath = strings.TrimSuffix(u.Path, "/")
		}
	}

	tags := map[string]*tagView{}
	addTag := func(name, desc string) *tagView {
		t := &tagView{ID: "tag-" + slug(name), Name: name}
		t.Description, _ = renderMarkdown(desc, 2, t.ID+"-")
		tags[name] = t
		v.Tags = append(v.Tags, t)
		return t
	}
	for _, t := range doc.Tags {
		addTag(t.Name, t.Description)
	}
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		for method, op := range item.Operations() {
			// Under its first tag only: the operationId is the element's id, which
			// deprecation links point at.
			name := "Other"
			if len(op.Tags) > 0 {
				name = op.Tags[0]
			}
			t := tags[name]
			if t == nil {
				t = addTag(name, "")
			}
			t.Operations = append(t.Operations, buildOperation(doc, basePath, path, method, item, op))
		}
	}
	for _, t := range v.Tags {
		slices.SortStableFunc(t.Operations, compareOperations)
	}
	v.Tags = slices.DeleteFunc(v.Tags, func(t *tagView) bool { return len(t.Operations) == 0 })

	if doc.Components != nil {
		for _, name := range slices.Sorted(maps.Keys(doc.Components.Schemas)) {
			ref := doc.Components.Schemas[name]
			// From its own definition, not the $ref, so that the section shows the
			// schema rather than a link to itself.
			v.Schemas = append(v.Schemas, propView{Name: name, Schema: schemaOf(&openapi3.SchemaRef{Value: ref.Value})})
		}
	}
	return v
}

// methodOrder orders the operations of one path the usual way.
var methodOrder = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions, http.MethodTrace}

// compareOperations orders operations as the document lists them, or by
// path and method without positions.
func compareOperations(a, b *operationView) int {
	return cmp.Or(cmp.Compare(a.line, b.line), strings.Compare(a.Path, b.Path), cmp.Compare(slices.Index(methodOrder, a.Method), slices.Index(methodOrder, b.Method)))
}

func buildOperation(doc *openapi3.T, basePath, path, method string, item *openapi3.PathItem, op *openapi3.Operation) *operationView {
	ov := &operationView{
		ID:         op.OperationID,
		Method:     method,
		Path:       path,
		Summary:    op.Summary,
		Deprecated: op.Deprecated,
	}
	if ov.ID == "" {
		// An anchor is needed all the same.
		ov.ID = strings.ToLower(method) + "-" + slug(path)
	}
	if op.Origin != nil && op.Origin.Key != nil {
		ov.line = op.Origin.Key.Line
	}
	ov.Description, _ = renderMarkdown(op.Description, 3, ov.ID+"-")
	ov.Stability, _ = op.Extensions[ExtStability].(string)
	if op.Deprecated {
		ov.Sunset, _ = op.Extensions[ExtSunset].(string)
		ov.DeprecatedSince, _ = op.Extensions[ExtDeprecatedSince].(string)
		ov.Successor, _ = op.Extensions[ExtSuccessor].(string)
	}
	ov.Auth = authOf(doc, op)

	// Path-level parameters apply unless the operation redefines them.
	var params []*openapi3.Parameter
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, p := range list {
			if p == nil || p.Value == nil {
				continue
			}
			if i := slices.IndexFunc(params, func(q *openapi3.Parameter) bool { return q.In == p.Value.In && q.Name == p.Value.Name }); i >= 0 {
				params[i] = p.Value
			} else {
				params = append(params, p.Value)
			}
		}
	}
	for _, p := range params {
		desc, _ := renderMarkdown(p.Description, 4, ov.ID+"-")
		ov.Params = append(ov.Params, paramView{
			Name: p.Name, In: p.In, Required: p.Required, Deprecated: p.Deprecated,
			Description: desc, Schema: schemaOf(p.Schema),
		})
	}

	if rb := op.RequestBody; rb != nil && rb.Value != nil {
		desc, _ := renderMarkdown(rb.Value.Description, 4, ov.ID+"-")
		ov.Body = &bodyView{Required: rb.Value.Required, Description: desc, Media: mediaViews(rb.Value.Content, false)}
	}

	if op.Responses != nil {
		for _, code := range slices.SortedFunc(maps.Keys(op.Responses.Map()), compareStatus) {
			rr := op.Responses.Value(code)
			if rr == nil || rr.Value == nil {
				continue
			}
			ov.Responses = append(ov.Responses, buildResponse(ov.ID, code, rr.Value))
		}
	}

	if hide, _ := op.Extensions[ExtHideTryIt].(bool); !hide {
		ov.TryIt = buildTryIt(ov, params)
		ov.TryIt.Path = basePath + path
		ov.TryIt.KeyHeader = apiKeyHeader(doc, ov.Auth)
		ov.TryIt.First = tryItFirstOf(doc, basePath, op)
	}
	return ov
}

// tryItFirstOf reads an operation's ExtTryItFirst; nil without one, or
// when it names operations the document lacks.
func tryItFirstOf(doc *openapi3.T, basePath string, op *openapi3.Operation) *tryItFirst {
	ext, _ := op.Extensions[ExtTryItFirst].(map[string]any)
	field, _ := ext["field"].(string)
	readID, _ := ext["read"].(string)
	createID, _ := ext["create"].(string)
	readPath, _ := operationByID(doc, readID)
	createPath, create := operationByID(doc, createID)
	if field == "" || readPath == "" || create == nil || create.RequestBody == nil || create.RequestBody.Value == nil {
		return nil
	}
	mt := create.RequestBody.Value.Content.Get("application/json")
	if mt == nil {
		return nil
	}
	examples := examplesOf(mt)
	if len(examples) == 0 {
		return nil
	}
	var body bytes.Buffer
	if err := json.Compact(&body, []byte(examples[0].JSON)); err != nil {
		return nil
	}
	// The read path's one parameter is the id, whatever its name.
	if i, j := strings.Index(readPath, "{"), strings.Index(readPath, "}"); i >= 0 && j > i {
		readPath = readPath[:i] + "{" + field + "}" + readPath[j+1:]
	}
	return &tryItFirst{Field: field, ReadPath: basePath + readPath, CreatePath: basePath + createPath, CreateBody: body.String()}
}

func operationByID(doc *openapi3.T, id string) (string, *openapi3.Operation) {
	if id == "" || doc.Paths == nil {
		return "", nil
	}
	for path, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.OperationID == id {
				return path, op
			}
		}
	}
	return "", nil
}

// compareStatus orders response codes numerically, ranges after their
// codes, default last.
func compareStatus(a, b string) int {
	rank := func(s string) string {
		switch {
		case s == "default":
			return "9zz"
		case len(s) == 3 && strings.EqualFold(s[1:], "xx"):
			return s[:1] + "zz"
		}
		return s
	}
	return strings.Compare(rank(a), rank(b))
}

func buildResponse(opID, code string, r *openapi3.Response) responseView {
	rv := responseView{Status: code, Success: strings.HasPrefix(code, "2")}
	if n, err := strconv.Atoi(code); err == nil {
		rv.Reason = http.StatusText(n)
	} else if code == "default" {
		rv.Reason = "any other status"
	}
	if r.Description != nil {
		rv.Description, _ = renderMarkdown(*r.Description, 4, opID+"-")
	}
	for _, name := range slices.Sorted(maps.Keys(r.Headers)) {
		h := r.Headers[name]
		if h == nil || h.Value == nil {
			continue
		}
		desc, _ := renderMarkdown(h.Value.Description, 5, opID+"-")
		rv.Headers = append(rv.Headers, paramView{Name: name, Description: desc, Schema: schemaOf(h.Value.Schema)})
	}
	// Error bodies are alike across operations: summed up here, shown in full
	// under Schemas.
	rv.Media = mediaViews(r.Content, !rv.Success)
	return rv
}

// mediaViews lists a body's media types; a brief one names a component's
// fields and links to its description.
func mediaViews(content openapi3.Content, brief bool) []mediaView {
	var out []mediaView
	for _, t := range slices.Sorted(maps.Keys(content)) {
		mt := content[t]
		if mt == nil {
			continue
		}
		sv := schemaOf(mt.Schema)
		if sv != nil && brief && sv.Ref != "" {
			sv.Brief = true
		}
		out = append(out, mediaView{Type: t, Schema: sv, Examples: examplesOf(mt)})
	}
	return out
}

// authOf describes what an operation needs: its own security or the
// document's; an empty requirement means public.
func authOf(doc *openapi3.T, op *openapi3.Operation) []authView {
	reqs := doc.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	var out []authView
	for _, req := range reqs {
		if len(req) == 0 {
			return nil
		}
		for name := range req {
			out = append(out, authView{Scheme: name, Description: describeScheme(doc, name)})
		}
	}
	slices.SortFunc(out, func(a, b authView) int { return strings.Compare(a.Scheme, b.Scheme) })
	return out
}

func securityScheme(doc *openapi3.T, name string) *openapi3.SecurityScheme {
	if doc.Components == nil || doc.Components.SecuritySchemes[name] == nil {
		return nil
	}
	return doc.Components.SecuritySchemes[name].Value
}

func describeScheme(doc *openapi3.T, name string) string {
	s := securityScheme(doc, name)
	switch {
	case s == nil:
	case s.Type == "apiKey":
		return fmt.Sprintf("an API key in the %s %s", s.Name, map[string]string{"header": "header", "query": "query parameter", "cookie": "cookie"}[s.In])
	case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"):
		return "a bearer token in the Authorization header"
	case s.Type == "http":
		return "HTTP " + s.Scheme + " authentication"
	}
	return name
}

// apiKeyHeader returns the header of the first API-key scheme an operation
// accepts, for the panel's key field.
func apiKeyHeader(doc *openapi3.T, auth []authView) string {
	for _, a := range auth {
		if s := securityScheme(doc, a.Scheme); s != nil && s.Type == "apiKey" && s.In == "header" {
			return s.Name
		}
	}
	return ""
}

func buildTryIt(ov *operationView, params []*openapi3.Parameter) *tryItView {
	t := &tryItView{}
	for _, p := range params {
		if p.In != "path" && p.In != "query" && p.In != "header" {
			continue
		}
		tp := tryItParam{
			ID:       ov.ID + "-try-" + p.In + "-" + slug(p.Name),
			Name:     p.Name,
			In:       p.In,
			Required: p.Required,
		}
		if p.Schema != nil && p.Schema.Value != nil {
			s := p.Schema.Value
			switch {
			case len(s.Enum) > 0:
				for _, e := range s.Enum {
					tp.Options = append(tp.Options, fmt.Sprint(e))
				}
			case s.Type.Is(openapi3.TypeBoolean):
				tp.Options = []string{"true", "false"}
			case s.Type.Is(openapi3.TypeInteger):
				tp.InputMode = "numeric"
			}
			if ex, ok := exampleFromSchema(p.Schema, 0); ok && tp.Options == nil {
				tp.Placeholder = fmt.Sprint(ex)
			}
		}
		if p.Example != nil {
			tp.Placeholder = fmt.Sprint(p.Example)
		}
		t.Params = append(t.Params, tp)
	}
	if ov.Body != nil && len(ov.Body.Media) > 0 {
		m := ov.Body.Media[0]
		if i := slices.IndexFunc(ov.Body.Media, func(m mediaView) bool { return m.Type == "application/json" }); i >= 0 {
			m = ov.Body.Media[i]
		}
		t.BodyType = m.Type
		if len(m.Examples) > 0 {
			t.Body = m.Examples[0].JSON
		}
	}
	return t
}
