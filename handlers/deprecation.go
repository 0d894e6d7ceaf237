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

// deprecation returns a deprecated operation's middleware (nil for others):
// Deprecation (RFC 9745), Sunset (RFC 8594), their Link relations and the
// successor's on every answer, and from the sunset date 410 naming the
// successor. Dates and successor come from the spec only.
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
	var to successorTemplate
	for t := successor; ; {
		open := strings.IndexByte(t, '{')
		end := strings.IndexByte(t[open+1:], '}')
		if open < 0 || end < 0 {
			to = append(to, t)
			break
		}
		to = append(to, t[:open], t[open+1:open+1+end])
		t = t[open+1+end+1:]
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Response().Header()
			h["Deprecation"] = deprecationValue
			h["Sunset"] = sunsetValue
			// The first Link: this runs before the handler.
			h["Link"] = to.value(c, linkPrefix, `>; rel="successor-version"`)
			if !s.now().Before(sunset) {
				return apiError(codeGone, "%s %s was removed on %s; use GET %s instead", op.Method, op.Path, sunset.Format(time.DateOnly), to.value(c, "", "")[0])
			}
			return next(c)
		}
	}, nil
}

// successorTemplate is the successor's URL template cut at its
// parameters: literal text at even indexes, path parameter names at odd.
type successorTemplate []string

// value is prefix, the successor's URL with the request's path parameters
// query-escaped in place, and suffix, as a header value from shared
// blocks: it runs on every answer.
func (t successorTemplate) value(c echo.Context, prefix, suffix string) []string {
	parts := append(make([]string, 0, 8), prefix)
	for i, part := range t {
		if i%2 == 0 {
			parts = append(parts, part)
		} else {
			parts = append(parts, url.QueryEscape(c.Param(part)))
		}
	}
	return headerValue(append(parts, suffix)...)
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
