package handlers

import (
	"fmt"
	"net/http"
	"time"

	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"

	"petstore/web"
)

// deprecation returns the middleware of a deprecated operation: Deprecation
// (RFC 9745), Sunset (RFC 8594) and their Link relations on every answer,
// and 410 gone from the sunset date on. The dates come from the spec only.
// It returns nil for an operation that is not deprecated.
func (s *Server) deprecation(op *routers.Route) (echo.MiddlewareFunc, error) {
	if !op.Operation.Deprecated {
		return nil, nil
	}
	sunset, err := specDate(op, web.ExtSunset)
	if err != nil {
		return nil, err
	}
	since, err := specDate(op, web.ExtDeprecatedSince)
	if err != nil {
		return nil, err
	}
	doc := "/#" + op.Operation.OperationID
	// Shared by every answer, as in securityHeaders.
	deprecationValue := []string{fmt.Sprintf("@%d", since.Unix())}
	sunsetValue := []string{sunset.Format(http.TimeFormat)}
	linkValue := []string{fmt.Sprintf(`<%s>; rel="deprecation"; type="text/html", <%s>; rel="sunset"; type="text/html"`, doc, doc)}
	gone := fmt.Sprintf("%s %s was removed on %s; see %s for what replaces it",
		op.Method, op.Path, sunset.Format(time.DateOnly), doc)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Response().Header()
			h["Deprecation"] = deprecationValue
			h["Sunset"] = sunsetValue
			h["Link"] = linkValue // the first Link: this runs before the handler
			if !s.now().Before(sunset) {
				return apiError(codeGone, "%s", gone)
			}
			return next(c)
		}
	}, nil
}

func specDate(op *routers.Route, ext string) (time.Time, error) {
	raw, ok := op.Operation.Extensions[ext]
	if !ok {
		return time.Time{}, fmt.Errorf("deprecated operation %s %s has no %s", op.Method, op.Path, ext)
	}
	str, ok := raw.(string)
	if !ok {
		return time.Time{}, fmt.Errorf("%s of %s %s is not a quoted YYYY-MM-DD string", ext, op.Method, op.Path)
	}
	t, err := time.Parse(time.DateOnly, str)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s of %s %s: %w", ext, op.Method, op.Path, err)
	}
	return t, nil
}
