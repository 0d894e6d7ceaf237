package handlers

import "github.com/labstack/echo/v4"

// apiCSP is the Content-Security-Policy of everything that is not a page:
// JSON, YAML and errors load nothing and may be framed by no one. The site
// and the dashboard replace it with their own policy.
const apiCSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"

// hsts is sent over TLS only. It has no includeSubDomains: customers'
// domains are theirs, and their other subdomains are not ours to pin.
const hsts = "max-age=31536000"

// The values of the headers every answer carries, shared by all answers:
// assigning them to the header map costs neither an allocation nor the key's
// canonicalisation. (net/http copies them when it sends the header.)
var (
	nosniffValue = []string{"nosniff"}
	apiCSPValue  = []string{apiCSP}
	hstsValue    = []string{hsts}
)

// securityHeaders sets the headers every answer carries. The HTML pages add
// their own policy, Referrer-Policy and X-Frame-Options (web sets them);
// JSON and YAML need neither (they send no referrer and have nothing to
// click), and CSP's frame-ancestors already forbids framing them. Each
// header costs every answer a measurable share of its time in net/http, so
// none is sent without a reason.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h["X-Content-Type-Options"] = nosniffValue
		h["Content-Security-Policy"] = apiCSPValue
		if c.Request().TLS != nil {
			h["Strict-Transport-Security"] = hstsValue
		}
		return next(c)
	}
}
