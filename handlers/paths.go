package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// The operator's trees of paths, decided here alone for the token guard,
// host routing and 401s' wording.
const (
	adminTree     = "/admin"
	metricsTree   = "/metrics"
	dashboardTree = "/dashboard"
)

// tokenPath reports whether a path is the operator's API (admin, backups,
// metrics). Every method on it needs the admin token, OPTIONS and unknown
// ones too, so that nothing, not even its methods, is told without it.
func tokenPath(p string) bool { return inTree(p, adminTree) || inTree(p, metricsTree) }

// operatorPath reports whether a path is the operator's (admin API,
// dashboard, metrics), never served on customers' domains or cleartext.
func operatorPath(p string) bool { return tokenPath(p) || inTree(p, dashboardTree) }

func inTree(p, root string) bool {
	return strings.HasPrefix(p, root) && (len(p) == len(root) || p[len(root)] == '/')
}

// guardOperatorPaths asks for the admin token on operator paths before
// anything else answers (Echo's OPTIONS and 405, the admin document,
// unknown paths). The admin operations are left to the validator, which
// checks the token after the body is read.
func (s *Server) guardOperatorPaths(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if !tokenPath(r.URL.Path) || s.validated[routeKey(r.Method, c.Path())] {
			return next(c)
		}
		if err := s.checkAdminToken(r); err == errBadCredentials {
			return s.failures.refuse(r, apiError(codeUnauthorized, "this route needs the admin token in an Authorization: Bearer header"))
		} else if err != nil {
			return err
		}
		return next(c)
	}
}

// cleartextListener marks a request from --http-listen (port 80 beside
// TLS).
type cleartextListener struct{}

// onCleartextListener reports whether r came in on --http-listen, where
// the admin token and backups would cross the network in the clear.
func onCleartextListener(r *http.Request) bool {
	return r.Context().Value(cleartextListener{}) != nil
}
