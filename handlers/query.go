package handlers

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/routers"

	"petstore/store"
)

// queryParameters are an operation's query parameters, its own and its
// path item's: all known, and single those declared as one value. The
// validator lets others through, so a typo (?stauts=sold) would answer
// unfiltered and a repeat (?limit=5&limit=6) would be first-wins.
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

// refuseUnknownQuery answers 400 naming every unknown query parameter and
// the known ones.
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
	for i, name := range unknown {
		unknown[i] = strconv.Quote(name)
	}
	return apiError(store.EINVALID, "query parameters %s: unknown; this operation %s", strings.Join(unknown, ", "), takes)
}

// refuseRepeatedQuery answers 400 naming the first of single (sorted)
// given more than once.
func refuseRepeatedQuery(query url.Values, single []string) error {
	for _, name := range single {
		if n := len(query[name]); n > 1 {
			return apiError(store.EINVALID, "query parameter %q: given %d times; this operation takes one value", name, n)
		}
	}
	return nil
}
