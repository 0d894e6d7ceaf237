package handlers

import (
	"cmp"
	"math"
	"net/http"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"
)

// quickCheck knows, for some requests, that the validator would pass them,
// without running it (docs/design.md, Validation): built at start for an
// operation with no body, only integer path or plain optional header
// parameters, and a credential kin-openapi's own check judges. Otherwise
// the validator runs, since it re-reads the operation on every request.
type quickCheck struct {
	params []intParam
	// headers are the optional string headers: absent or within their
	// length bounds, they pass.
	headers []headerParam
	// security is the operation's requirements (nil: none), checked by
	// kin-openapi.
	security openapi3.SecurityRequirements
	route    *routers.Route
	opts     *openapi3filter.Options
}

// intParam is an integer path parameter and its schema's bounds
// (infinite where none).
type intParam struct {
	name     string
	min, max float64
}

// headerParam is an optional header parameter, a plain string with at most
// length bounds.
type headerParam struct {
	name     string // canonical: looked up without Values' canonicalizing
	min, max int    // in characters; max < 0: none
}

// maxQuickDigits keeps values within 2^53, which the validator's float64
// sees exactly.
const maxQuickDigits = 15

// newQuickCheck returns the operation's quick check, or nil when its
// validation cannot be known in advance; opts are the validator's.
func newQuickCheck(op *routers.Route, opts *openapi3filter.Options) *quickCheck {
	o := op.Operation
	q := &quickCheck{route: op, opts: opts}
	if o.RequestBody != nil {
		return nil
	}
	sec := cmp.Or(o.Security, &op.Spec.Security) // without its own, the document's applies
	for _, req := range *sec {
		if len(req) == 0 {
			return nil // an empty requirement: anyone; rare, left to the validator
		}
	}
	if len(*sec) > 0 {
		q.security = *sec
	}
	params := slices.Concat(op.PathItem.Parameters, o.Parameters)
	if len(params) == 0 && len(q.security) == 0 {
		return nil // nothing for the validator to do that this would save
	}
	for _, ref := range params {
		p := ref.Value
		if h, ok := plainHeader(p); ok {
			q.headers = append(q.headers, h)
			continue
		}
		if p == nil || p.In != openapi3.ParameterInPath || p.Schema == nil || p.Schema.Value == nil || p.Content != nil ||
			(p.Style != "" && p.Style != openapi3.SerializationSimple) || (p.Explode != nil && *p.Explode) {
			return nil
		}
		s := p.Schema.Value
		if !s.Type.Is(openapi3.TypeInteger) || (s.Format != "" && s.Format != "int32" && s.Format != "int64") ||
			len(s.Enum) > 0 || s.MultipleOf != nil || s.Nullable || s.ExclusiveMin.IsSet() || s.ExclusiveMax.IsSet() || s.Const != nil || s.If != nil ||
			s.Not != nil || len(s.AllOf) > 0 || len(s.AnyOf) > 0 || len(s.OneOf) > 0 {
			return nil
		}
		ip := intParam{name: p.Name, min: math.Inf(-1), max: math.Inf(1)}
		if s.Min != nil {
			ip.min = *s.Min
		}
		if s.Max != nil {
			ip.max = *s.Max
		}
		if s.Format == "int32" {
			ip.min, ip.max = max(ip.min, -1<<31), min(ip.max, 1<<31-1)
		}
		q.params = append(q.params, ip)
	}
	return q
}

// passes reports whether the request surely passes validation; false
// means "run the validator".
func (q *quickCheck) passes(c echo.Context) bool {
	r := c.Request()
	if r.URL.RawQuery != "" || r.ContentLength != 0 || (r.Body != nil && r.Body != http.NoBody) {
		return false
	}
	for i := range q.params {
		p := &q.params[i]
		n, ok := plainDecimal(c.Param(p.name))
		if !ok || float64(n) < p.min || float64(n) > p.max {
			return false
		}
	}
	for i := range q.headers {
		h := &q.headers[i]
		switch v := r.Header[h.name]; len(v) {
		case 0:
		case 1:
			if n := utf8.RuneCountInString(v[0]); !utf8.ValidString(v[0]) || n < h.min || (h.max >= 0 && n > h.max) {
				return false
			}
		default:
			return false
		}
	}
	return q.security == nil || q.authenticated(r)
}

// plainHeader reports whether p is a headerParam, and returns it.
func plainHeader(p *openapi3.Parameter) (headerParam, bool) {
	if p == nil || p.In != openapi3.ParameterInHeader || p.Required || p.Schema == nil || p.Schema.Value == nil || p.Content != nil ||
		(p.Style != "" && p.Style != openapi3.SerializationSimple) {
		return headerParam{}, false
	}
	s := p.Schema.Value
	if !s.Type.Is(openapi3.TypeString) || s.Format != "" || s.Pattern != "" || len(s.Enum) > 0 || s.Nullable || s.Const != nil || s.If != nil ||
		s.Not != nil || len(s.AllOf) > 0 || len(s.AnyOf) > 0 || len(s.OneOf) > 0 {
		return headerParam{}, false
	}
	h := headerParam{name: http.CanonicalHeaderKey(p.Name), min: int(s.MinLength), max: -1}
	if s.MaxLength != nil {
		h.max = int(*s.MaxLength)
	}
	return h, true
}

// authenticated runs kin-openapi's security check alone, on a bodiless
// copy of the request (the check would read and copy the body).
func (q *quickCheck) authenticated(r *http.Request) bool {
	noBody := *r
	noBody.Body = nil
	in := openapi3filter.RequestValidationInput{Request: &noBody, Route: q.route, Options: q.opts}
	return openapi3filter.ValidateSecurityRequirements(r.Context(), &in, q.security) == nil
}

// plainDecimal parses at most maxQuickDigits digits, no sign or leading
// zero.
func plainDecimal(s string) (int64, bool) {
	// ParseInt alone would take a sign.
	if s == "" || len(s) > maxQuickDigits || s[0] < '0' || s[0] > '9' || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
