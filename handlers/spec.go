package handlers

import (
	"fmt"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"

	"petstore/web"
)

// apiDoc is an OpenAPI document parsed and validated at start, with a
// kin-openapi route per operation keyed as Echo names routes, so that the
// validator gets Echo's match rather than routing again.
type apiDoc struct {
	doc  *openapi3.T
	yaml []byte
	json []byte
	ops  map[string]*routers.Route // routeKey(method, echo path) -> operation
}

func loadDoc(data []byte) (*apiDoc, error) {
	doc, err := web.ParseSpec(data)
	if err != nil {
		return nil, err
	}
	js, err := doc.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("converting OpenAPI document to JSON: %w", err)
	}
	d := &apiDoc{doc: doc, yaml: data, json: js, ops: map[string]*routers.Route{}}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			d.ops[routeKey(method, echoPath(path))] = &routers.Route{
				Spec: doc, Path: path, PathItem: item, Method: method, Operation: op,
			}
		}
	}
	return d, nil
}

// missing lists the spec's operations that have no route among registered.
func (d *apiDoc) missing(registered map[string]bool) []string {
	var out []string
	for key, r := range d.ops {
		if !registered[key] {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	sort.Strings(out)
	return out
}

func routeKey(method, echoPath string) string { return method + " " + echoPath }

// echoPath turns /pets/{petId} into Echo's /pets/:petId.
func echoPath(p string) string { return strings.NewReplacer("{", ":", "}", "").Replace(p) }
