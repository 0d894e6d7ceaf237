package handlers

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"petstore/domains"
)

// routeHost decides what a request gets from its Host, before any route:
// default address and loopback everything, verified domains the site and
// API, redirect sources their redirect, others 421. Probes answer on any
// Host, for load balancers.
func (s *Server) routeHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if isProbe(req.URL.Path) {
			return next(c)
		}
		// Over TLS the Host must be the certificate's: one customer domain never
		// answers for another.
		if req.TLS != nil && req.TLS.ServerName != "" && !strings.EqualFold(domains.HostName(req.Host), req.TLS.ServerName) {
			return apiError(codeUnknownHost, "the Host header does not match the TLS server name")
		}
		if operatorPath(req.URL.Path) && onCleartextListener(req) { // the path first: the mark is a walk up the context
			return echo.ErrNotFound
		}
		r := s.domains.Route(req.Host)
		switch r.Decision {
		case domains.ServeAll:
			return next(c)
		case domains.ServePublic:
			if operatorPath(req.URL.Path) {
				return echo.ErrNotFound
			}
			return next(c)
		case domains.Redirect:
			c.Response().Header().Set(echo.HeaderLocation, "https://"+r.To+pathAndQuery(req))
			return c.NoContent(r.Status)
		default:
			return apiError(codeUnknownHost, "this service does not serve the host %q", domains.HostName(req.Host))
		}
	}
}

// HTTPSRedirect is the plain-HTTP listener's handler: hosts served over TLS
// are sent there (redirect sources straight to their target); loopback
// and unknown hosts go to the server (421 for unknown), except operator
// paths, 404 there: the admin token never crosses port 80.
func (s *Server) HTTPSRedirect() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := s.domains.Route(r.Host)
		host := domains.HostName(r.Host)
		status := http.StatusPermanentRedirect
		switch {
		case route.Decision == domains.Redirect:
			host, status = route.To, route.Status
		case route.Decision == domains.ServePublic,
			route.Decision == domains.ServeAll && !domains.IsLocal(host):
		default:
			s.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), cleartextListener{}, true)))
			return
		}
		http.Redirect(w, r, "https://"+host+pathAndQuery(r), status)
	})
}

// pathAndQuery is what a redirect keeps of a request's target; OPTIONS *
// becomes the root.
func pathAndQuery(r *http.Request) string {
	if uri := r.URL.RequestURI(); strings.HasPrefix(uri, "/") {
		return uri
	}
	return "/"
}
