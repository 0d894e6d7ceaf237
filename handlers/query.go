package handlers

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/routers"

	"petstore/store"
)

// queryParameters is the set of query parameters an operation defines, its
// own and its path item's. The validator checks those it is given but lets
// any other through, so that a typo (?stauts=sold) would quietly answer as
// if no filter had been asked for.
func queryParameters(op *routers.Route) []string {
	var names []string
	for _, p := range slices.Concat(op.PathItem.Parameters, op.Operation.Parameters) {
		if p.Value != nil && p.Value.In == "query" {
			names = append(names, p.Value.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// refuseUnknownQuery answers 400 naming every query parameter of the request
// that is not among known, and the ones the operation takes.
func refuseUnknownQuery(query url.Values, known []string) error {
	var unknown []string
	for name := range query {
		if !slices.Contains(known, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	takes := "takes no query parameters"
	if len(known) > 0 {
		takes = "takes only " + strings.Join(known, ", ")
	}
	if len(unknown) == 1 {
		return apiError(store.EINVALID, "query parameter %q: unknown; this operation %s", unknown[0], takes)
	}
	return apiError(store.EINVALID, "query parameters %s: unknown; this operation %s", quoteAll(unknown), takes)
}

func quoteAll(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return strings.Join(quoted, ", ")
}

// singleQueryParameters is the set of query parameters of an operation that
// its document declares as one value (any schema but an array): a repeated
// one (?limit=5&limit=6) would otherwise be first-wins, silently.
func singleQueryParameters(op *routers.Route) []string {
	var names []string
	for _, p := range slices.Concat(op.PathItem.Parameters, op.Operation.Parameters) {
		v := p.Value
		if v == nil || v.In != "query" {
			continue
		}
		if v.Schema != nil && v.Schema.Value != nil && v.Schema.Value.Type.Is("array") {
			continue
		}
		names = append(names, v.Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// refuseRepeatedQuery answers 400 naming the first parameter of single
// (sorted) that the query gives more than once.
func refuseRepeatedQuery(query url.Values, single []string) error {
	for _, name := range single {
		if n := len(query[name]); n > 1 {
			return apiError(store.EINVALID, "query parameter %q: given %d times; this operation takes one value", name, n)
		}
	}
	return nil
}
