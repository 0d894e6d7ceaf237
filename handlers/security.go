package handlers

import "github.com/labstack/echo/v4"

// apiCSP is the Content-Security-Policy of everything but pages: JSON, YAML
// and errors load nothing and may be framed by no one.
const apiCSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"

// hsts is sent over TLS only, without includeSubDomains: customers' other
// subdomains are not ours to pin.
const hsts = "max-age=31536000"

// Header values every answer carries, shared: assigning them costs no
// allocation nor canonicalisation (net/http copies them when sending).
var (
	nosniffValue = []string{"nosniff"}
	apiCSPValue  = []string{apiCSP}
	hstsValue    = []string{hsts}
)

// securityHeaders sets the headers every answer carries. HTML pages add
// their own policy, Referrer-Policy and X-Frame-Options (web); JSON and
// YAML need neither. Each header costs every answer a measurable share of
// its time, so none is sent without a reason.
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
