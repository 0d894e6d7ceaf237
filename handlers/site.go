package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"petstore/web"
)

// The published reference and the dashboard are package web's; this file
// mounts them. Host routing (hosts.go) already keeps /dashboard/ off
// customers' domains, so the dashboard needs no check of its own here, and
// it needs no token to load: it is a static page that asks for the token
// and sends it to the admin API, which checks it.

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

// serveAsset serves the asset named by the rest of the path, or the API's
// own 404: asset names carry a content hash, so an old page asking for a
// file of an earlier build gets a clear miss rather than a wrong file.
func serveAsset(lookup func(name string) *web.Resource) echo.HandlerFunc {
	return func(c echo.Context) error {
		if r := lookup(c.Param("*")); r != nil {
			return echo.WrapHandler(r)(c)
		}
		return echo.ErrNotFound
	}
}
