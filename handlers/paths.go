package handlers

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// The operator's trees of paths. Which paths are the operator's is decided
// here alone: the admin token guard, host routing and the wording of 401s
// all ask these functions.
const (
	adminTree     = "/admin"
	metricsTree   = "/metrics"
	dashboardTree = "/dashboard"
)

// tokenPath reports whether a path is the operator's API: the admin API,
// backups and metrics. Every method on it needs the admin token, OPTIONS
// and unknown methods included, so that nothing about it (not even which
// methods exist) is told to someone without the token.
func tokenPath(p string) bool { return inTree(p, adminTree) || inTree(p, metricsTree) }

// operatorPath reports whether a path belongs to the operator (admin API,
// dashboard, metrics): those are never served on customers' domains, nor
// on the cleartext listener.
func operatorPath(p string) bool { return tokenPath(p) || inTree(p, dashboardTree) }

// inTree reports whether path p is root or below it.
func inTree(p, root string) bool {
	return strings.HasPrefix(p, root) && (len(p) == len(root) || p[len(root)] == '/')
}

// guardOperatorPaths asks for the admin token on operator paths before
// anything else answers: Echo's OPTIONS and 405 answers, the admin
// document, and paths that do not exist. The operations of the admin
// document are left to the validator, which checks the token itself after
// the body is read (see readBody).
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

// cleartextListener marks a request that came in on --http-listen, the
// public port 80 beside the TLS listener.
type cleartextListener struct{}

// onCleartextListener reports whether r came in on --http-listen, where
// operator paths are never served: the admin token and backups would cross
// the network in the clear.
func onCleartextListener(r *http.Request) bool {
	return r.Context().Value(cleartextListener{}) != nil
}

func markCleartext(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), cleartextListener{}, true))
}
