package handlers

import (
	"bytes"
	"io"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"
)

// quickCheck knows, for some requests, what the validator would answer
// without running it. It is built at start from an operation whose only
// parameters are integer path parameters with at most bounds in their
// schema, whose credential (if any) is one the validator checks by calling
// back into this server, and whose body (if any) is JSON with a schema that
// compileBodySchema understands: GET /pets/{petId}, POST /pets, PUT
// /categories/{categoryId} and their kind. A request with no query string,
// plain decimal path values within those bounds, a credential that
// kin-openapi's own security check accepts (it calls the server's
// AuthenticationFunc, as in full validation) and a body that bodySchema
// accepts passes such an operation's validation; for anything else the
// validator runs as usual, and its answer (and message) stands.
//
// kin-openapi re-reads the operation on every request (parameter decoding,
// schema settings, option closures) and decodes a body into maps before
// walking the schema: about a quarter of the in-process cost of GET
// /pets/{id}, and about a sixth of POST /pets, to accept what this check
// accepts.
type quickCheck struct {
	params []intParam
	// security is the operation's requirements (nil: no credential
	// needed), checked by kin-openapi with opts, on route.
	security openapi3.SecurityRequirements
	route    *routers.Route
	opts     *openapi3filter.Options
	// body is the JSON body's schema; nil when the operation takes none.
	body *bodySchema
}

// intParam is an integer path parameter and its schema's bounds.
type intParam struct {
	name     string
	min, max float64
	hasMin   bool
	hasMax   bool
}

// maxQuickDigits keeps values within 2^53, which the validator (decoding
// numbers as float64) sees exactly.
const maxQuickDigits = 15

// maxQuickBody is the largest body the quick check reads; larger ones go
// to the validator.
const maxQuickBody = 16 << 10

// newQuickCheck returns the operation's quick check, or nil when its
// validation cannot be known in advance. opts are the validator's options,
// its AuthenticationFunc among them.
func newQuickCheck(op *routers.Route, opts *openapi3filter.Options) *quickCheck {
	o := op.Operation
	q := &quickCheck{route: op, opts: opts}
	if o.RequestBody != nil {
		rb := o.RequestBody.Value
		if rb == nil || !rb.Required {
			return nil
		}
		mt := rb.Content[echo.MIMEApplicationJSON]
		if mt == nil || mt.Schema == nil || len(mt.Encoding) > 0 {
			return nil
		}
		if q.body = compileBodySchema(mt.Schema.Value, 0); q.body == nil {
			return nil
		}
	}
	sec := o.Security
	if sec == nil {
		sec = &op.Spec.Security // the document's default applies
	}
	for _, req := range *sec {
		if len(req) == 0 {
			return nil // an empty requirement: anyone; rare, left to the validator
		}
	}
	if len(*sec) > 0 {
		if opts == nil || opts.AuthenticationFunc == nil {
			return nil
		}
		q.security = *sec
	}
	params := append(openapi3.Parameters{}, op.PathItem.Parameters...)
	params = append(params, o.Parameters...)
	if len(params) == 0 && q.body == nil && len(q.security) == 0 {
		return nil // nothing for the validator to do that this would save
	}
	for _, ref := range params {
		p := ref.Value
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
		ip := intParam{name: p.Name}
		if s.Min != nil {
			ip.min, ip.hasMin = *s.Min, true
		}
		if s.Max != nil {
			ip.max, ip.hasMax = *s.Max, true
		}
		if s.Format == "int32" {
			ip.setBounds(-1<<31, 1<<31-1)
		}
		q.params = append(q.params, ip)
	}
	return q
}

// setBounds narrows the bounds to a format's range.
func (p *intParam) setBounds(lo, hi float64) {
	if !p.hasMin || p.min < lo {
		p.min, p.hasMin = lo, true
	}
	if !p.hasMax || p.max > hi {
		p.max, p.hasMax = hi, true
	}
}

// passes reports whether the request passes the operation's validation
// for certain; false means "run the validator". A body it reads is put
// back as it was, or, when it passes, as a checkedBody.
func (q *quickCheck) passes(c echo.Context) bool {
	r := c.Request()
	if r.URL.RawQuery != "" {
		return false
	}
	if q.body == nil && (r.ContentLength != 0 || (r.Body != nil && r.Body != http.NoBody)) {
		return false
	}
	for i := range q.params {
		p := &q.params[i]
		n, ok := plainDecimal(c.Param(p.name))
		if !ok || p.hasMin && float64(n) < p.min || p.hasMax && float64(n) > p.max {
			return false
		}
	}
	if q.security != nil && !q.authenticated(r) {
		return false
	}
	if q.body != nil {
		return q.bodyPasses(r)
	}
	return true
}

// authenticated runs kin-openapi's security check alone, on a copy of the
// request without its body (which that check would otherwise read and
// copy, and which no credential here is in).
func (q *quickCheck) authenticated(r *http.Request) bool {
	noBody := *r
	noBody.Body = nil
	in := openapi3filter.RequestValidationInput{Request: &noBody, Route: q.route, Options: q.opts}
	return openapi3filter.ValidateSecurityRequirements(r.Context(), &in, q.security) == nil
}

// bodyPasses reads the body, which must be of a declared length, plain
// (no Content-Encoding) application/json, and checks it.
func (q *quickCheck) bodyPasses(r *http.Request) bool {
	if r.ContentLength <= 0 || r.ContentLength > maxQuickBody || r.Body == nil ||
		len(r.Header[echo.HeaderContentEncoding]) > 0 || r.Header.Get(echo.HeaderContentType) != echo.MIMEApplicationJSON {
		return false
	}
	data := make([]byte, r.ContentLength)
	n := 0
	for n < len(data) {
		m, err := r.Body.Read(data[n:])
		n += m
		if err != nil && n < len(data) {
			// Hand the validator the same bytes and the same error.
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(data[:n]), errReader{err}))
			return false
		}
	}
	cb := &checkedBody{data: data}
	cb.Reset(data)
	r.Body = cb
	if !q.body.accepts(data) {
		r.Body = io.NopCloser(bytes.NewReader(data))
		return false
	}
	return true
}

// checkedBody is a request body that passed bodySchema: strict JSON with
// valid UTF-8 and no repeated member, so decodeBody needs not check that
// again, nor copy it.
type checkedBody struct {
	bytes.Reader
	data []byte
}

func (*checkedBody) Close() error { return nil }

// errReader returns its error, for a body whose reading failed.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// plainDecimal parses digits without sign or leading zero, at most
// maxQuickDigits of them.
func plainDecimal(s string) (int64, bool) {
	if s == "" || len(s) > maxQuickDigits || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
