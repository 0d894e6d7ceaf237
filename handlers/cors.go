package handlers

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// corsExposedHeaders are the response headers a script on an allowed origin
// may read; without them a browser hides everything but the simple ones,
// and a client could not follow pages (Link), find what it created
// (Location), quote a request id, see a deprecation or the rate limit, or
// send back a version (ETag).
var corsExposedHeaders = []string{"Link", "Location", "X-Request-Id", "Deprecation", "Sunset", "Retry-After", "RateLimit", "RateLimit-Policy", "ETag", headerReplayed}

// CheckCORSOrigin refuses what a browser never sends as an Origin, so that
// a typo in --cors-origin (a trailing slash, a path, a missing scheme,
// upper case in the host, the scheme's default port) is
// reported at start instead of silently matching nothing. "*" allows every
// origin; there are no patterns.
func CheckCORSOrigin(origin string) error {
	if origin == "*" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || u.String() != origin ||
		strings.ContainsAny(u.Host, "*?") || u.Host != strings.ToLower(u.Host) ||
		(u.Scheme == "https" && u.Port() == "443") || (u.Scheme == "http" && u.Port() == "80") {
		return fmt.Errorf("CORS origin %q: must be scheme://host[:port] as a browser sends it, such as https://app.example.com, or *", origin)
	}
	return nil
}

// cors lets scripts on the configured origins call the public API: preflight
// requests are answered, and answers name the origin and expose
// corsExposedHeaders. Operator paths are skipped, so a browser never lets
// another origin use the admin API, the dashboard or the metrics. Keys go
// in X-API-Key, never in cookies, so credentials are not allowed.
func cors(origins []string) echo.MiddlewareFunc {
	return middleware.CORSWithConfig(middleware.CORSConfig{
		Skipper: func(c echo.Context) bool { return operatorPath(c.Request().URL.Path) },
		AllowOriginFunc: func(origin string) (bool, error) {
			return slices.Contains(origins, "*") || slices.Contains(origins, origin), nil
		},
		AllowMethods:  []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete},
		AllowHeaders:  []string{echo.HeaderContentType, headerAPIKey, echo.HeaderXRequestID, "If-Match", "If-None-Match", headerIdempotencyKey},
		ExposeHeaders: corsExposedHeaders,
		MaxAge:        600,
	})
}
