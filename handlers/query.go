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
