package handlers

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/routers"

	"petstore/store"
)

// queryParameters are the query parameters an operation defines, its own
// and its path item's: known all of them, single those its document
// declares as one value (any schema but an array). The validator checks
// those it is given but lets any other through, so that a typo
// (?stauts=sold) would quietly answer as if no filter had been asked for,
// and a repeated one (?limit=5&limit=6) would be first-wins, silently.
func queryParameters(op *routers.Route) (known, single []string) {
	for _, p := range slices.Concat(op.PathItem.Parameters, op.Operation.Parameters) {
		if v := p.Value; v != nil && v.In == "query" {
			known = append(known, v.Name)
			if v.Schema == nil || v.Schema.Value == nil || !v.Schema.Value.Type.Is("array") {
				single = append(single, v.Name)
			}
		}
	}
	slices.Sort(known)
	slices.Sort(single)
	return slices.Compact(known), slices.Compact(single)
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
