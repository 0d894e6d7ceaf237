package handlers

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"

	"petstore/web"
)

// deprecation returns the middleware of a deprecated operation: Deprecation
// (RFC 9745), Sunset (RFC 8594), their Link relations and the successor's
// (rel="successor-version", for the same resource) on every answer, and 410
// gone naming the successor from the sunset date on. The dates and the
// successor come from the spec only.
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
	successor, _ := op.Operation.Extensions[web.ExtSuccessor].(string)
	if successor == "" {
		return nil, fmt.Errorf("deprecated operation %s %s has no %s: deprecate only with a working successor", op.Method, op.Path, web.ExtSuccessor)
	}
	// Shared by every answer, as in securityHeaders.
	deprecationValue := []string{fmt.Sprintf("@%d", since.Unix())}
	sunsetValue := []string{sunset.Format(http.TimeFormat)}
	linkPrefix := fmt.Sprintf(`<%s>; rel="deprecation"; type="text/html", <%s>; rel="sunset"; type="text/html", <`, doc, doc)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Response().Header()
			h["Deprecation"] = deprecationValue
			h["Sunset"] = sunsetValue
			to := successorURL(successor, c)
			// The first Link: this runs before the handler.
			h["Link"] = []string{linkPrefix + to + `>; rel="successor-version"`}
			if !s.now().Before(sunset) {
				return apiError(codeGone, "%s %s was removed on %s; use GET %s instead", op.Method, op.Path, sunset.Format(time.DateOnly), to)
			}
			return next(c)
		}
	}, nil
}

// successorURL fills the path parameters of the request into the
// successor's URL template ({petId} in /pets?id={petId}), escaped for a
// query, where the successor puts them.
func successorURL(template string, c echo.Context) string {
	names, values := c.ParamNames(), c.ParamValues()
	for i, name := range names {
		if i < len(values) {
			template = strings.ReplaceAll(template, "{"+name+"}", url.QueryEscape(values[i]))
		}
	}
	return template
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
