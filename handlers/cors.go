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

// corsExposedHeaders are the response headers a script on an allowed
// origin may read; browsers hide all but the simple ones otherwise.
var corsExposedHeaders = []string{"Link", "Location", "X-Request-Id", "Deprecation", "Sunset", "Retry-After", "RateLimit", "RateLimit-Policy", "ETag", headerReplayed}

// CheckCORSOrigin refuses what a browser never sends as an Origin, so that
// a typo in --cors-origin is reported at start rather than matching
// nothing. "*" allows every origin; there are no patterns.
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

// cors lets scripts on the configured origins call the public API:
// preflights are answered, answers name the origin and expose
// corsExposedHeaders. Operator paths are skipped, so that no other origin
// uses the admin API. Keys go in X-API-Key, never cookies, so credentials
// are not allowed.
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
