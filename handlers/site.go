package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"petstore/web"
)

// The reference and the dashboard are package web's; this file mounts
// them. Host routing keeps /dashboard/ off customers' domains, and the
// static dashboard needs no token to load: it sends the token to the
// admin API, which checks it.

// siteRoutes mounts the reference at /, the dashboard at /dashboard/, and
// their assets, all prepared by web.NewSite.
func (s *Server) siteRoutes() {
	site, e := s.site, s.echo
	e.Match(getHead, web.ReferencePath, echo.WrapHandler(site.Reference), s.inFlight.limit)
	e.Match(getHead, web.AssetsPath+"*", serveAsset(site.SiteAsset), s.inFlight.limit)
	e.Match(getHead, web.FaviconPath, echo.WrapHandler(site.Favicon))
	e.Match(getHead, "/dashboard", func(c echo.Context) error {
		return c.Redirect(http.StatusMovedPermanently, web.DashboardPath)
	})
	e.Match(getHead, web.DashboardPath, echo.WrapHandler(site.Dashboard))
	e.Match(getHead, web.DashboardAssetsPath+"*", serveAsset(site.DashboardAsset))
}

// serveAsset serves the named asset or the API's 404, a clear miss for an
// old page asking for an earlier build's hashed file.
func serveAsset(lookup func(name string) *web.Resource) echo.HandlerFunc {
	return func(c echo.Context) error {
		if r := lookup(c.Param("*")); r != nil {
			return echo.WrapHandler(r)(c)
		}
		return echo.ErrNotFound
	}
}
