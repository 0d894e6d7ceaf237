package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"

	"petstore/server/accesslog"
	"petstore/server/clientkey"
	"petstore/store"
)

// Error codes only the HTTP layer produces; with store/errors.go's they
// are the Error schema's enum.
const (
	codeUnauthorized         = "unauthorized"
	codeMethodNotAllowed     = "method_not_allowed"
	codeGone                 = store.EGONE
	codePayloadTooLarge      = "payload_too_large"
	codeRequestTimeout       = "request_timeout"
	codeUnsupportedMediaType = "unsupported_media_type"
	codeUnknownHost          = "unknown_host"
	codeHeadersTooLarge      = "headers_too_large"
	codeRateLimited          = "rate_limited"
	codeUnavailable          = "unavailable"
)

// statusOf is the one place where an error code becomes an HTTP status.
var statusOf = map[string]int{
	store.EINVALID:           http.StatusBadRequest,
	codeUnauthorized:         http.StatusUnauthorized,
	store.EPLANREQUIRED:      http.StatusForbidden,
	store.ENOTFOUND:          http.StatusNotFound,
	codeMethodNotAllowed:     http.StatusMethodNotAllowed,
	store.ECONFLICT:          http.StatusConflict,
	store.EINSUFFICIENTSTOCK: http.StatusConflict,
	store.EDOMAINEXISTS:      http.StatusConflict,
	store.ENOCNAMETARGET:     http.StatusConflict,
	store.ENOACMEDNSZONE:     http.StatusConflict,
	codeGone:                 http.StatusGone,
	store.EPRECONDITION:      http.StatusPreconditionFailed,
	store.EIDEMPOTENCYBUSY:   http.StatusConflict,
	store.EIDEMPOTENCYREUSED: http.StatusUnprocessableEntity,
	codePayloadTooLarge:      http.StatusRequestEntityTooLarge,
	codeRequestTimeout:       http.StatusRequestTimeout,
	codeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	codeUnknownHost:          http.StatusMisdirectedRequest,
	codeHeadersTooLarge:      http.StatusRequestHeaderFieldsTooLarge,
	store.EUNPROCESSABLE:     http.StatusUnprocessableEntity,
	codeRateLimited:          http.StatusTooManyRequests,
	store.EINTERNAL:          http.StatusInternalServerError,
	store.ENOTSUPPORTED:      http.StatusNotImplemented,
	codeUnavailable:          http.StatusServiceUnavailable,
	store.EUNAVAILABLE:       http.StatusServiceUnavailable,

	store.EINSUFFICIENTSTORAGE: http.StatusInsufficientStorage,
}

// codeOfStatus names the error of a status below 500 without a code of
// ours (from Echo).
var codeOfStatus = map[int]string{
	http.StatusBadRequest:                  store.EINVALID,
	http.StatusUnauthorized:                codeUnauthorized,
	http.StatusNotFound:                    store.ENOTFOUND,
	http.StatusMethodNotAllowed:            codeMethodNotAllowed,
	http.StatusConflict:                    store.ECONFLICT,
	http.StatusGone:                        codeGone,
	http.StatusPreconditionFailed:          store.EPRECONDITION,
	http.StatusRequestTimeout:              codeRequestTimeout,
	http.StatusRequestEntityTooLarge:       codePayloadTooLarge,
	http.StatusUnsupportedMediaType:        codeUnsupportedMediaType,
	http.StatusMisdirectedRequest:          codeUnknownHost,
	http.StatusRequestHeaderFieldsTooLarge: codeHeadersTooLarge,
	http.StatusUnprocessableEntity:         store.EUNPROCESSABLE,
	http.StatusTooManyRequests:             codeRateLimited,
}

// retryAfter is the Retry-After of errors whose wait is known. A full disk
// (507) waits for an operator, so clients should not retry in a loop.
var retryAfter = map[string]time.Duration{
	store.EINSUFFICIENTSTORAGE: time.Minute,
	store.EUNAVAILABLE:         databaseRetryAfter,
	store.EIDEMPOTENCYBUSY:     keyBusyRetryAfter,
}

// statusClientClosed is the status logged and counted for an abandoned
// request (nginx's 499); it is never sent.
const statusClientClosed = 499

// databaseRetryAfter: a lock or failover is usually over within seconds.
const databaseRetryAfter = 2 * time.Second

// Error is the body of every non-2xx response: the API's Error schema.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

// apiError builds an application error with a code of either layer.
func apiError(code, format string, args ...any) error {
	return store.Errorf(code, format, args...)
}

// handleError is Echo's HTTPErrorHandler: every failure leaves through
// here as an Error body whose status matches the HTTP status.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	body := s.classify(err, c)
	if body.Status >= 500 && c.Request().Context().Err() != nil {
		// The client abandoned the request: what failed is the wait for it, not
		// the service, and it reads no answer.
		c.Response().WriteHeader(statusClientClosed)
		return
	}
	if body.Status == http.StatusTooManyRequests || body.Status == http.StatusServiceUnavailable {
		// A client turned away gives its connection back: kept alive, it would
		// hold a descriptor the service is short of.
		c.Response().Header().Set(echo.HeaderConnection, "close")
	}
	if wait, ok := retryAfter[body.Code]; ok {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
	}
	if body.Status == http.StatusUnauthorized && presentedCredential(c.Request()) {
		s.failures.fail(clientkey.Of(c.Request().RemoteAddr), time.Now())
	}
	if body.Status >= 500 && !isProbe(c.Path()) && s.logInFull(body, c) {
		// The store's failure, not kin-openapi's security check that met it.
		if appErr := (*store.Error)(nil); errors.As(err, &appErr) && appErr.Code == body.Code {
			err = appErr
		}
		s.log.Error("request failed", "request_id", requestID(c), "method", c.Request().Method, "route", c.Path(), "status", body.Status, "err", err)
	}
	if c.Request().Method == http.MethodHead {
		jsonType(c)
		_ = c.NoContent(body.Status)
		return
	}
	if werr := respond(c, body.Status, body); werr != nil {
		s.log.Warn("writing error response", "request_id", requestID(c), "err", werr)
	}
}

// storeDown summarizes, by code and message, the requests failed on a
// store that is unavailable or at a cap: while it lasts, every request
// fails alike, and a line each would bury the cause.
type storeDown struct {
	mu sync.Mutex
	m  map[[2]string]*accesslog.Summary
}

// logInFull says whether to log the failure c answers with body: always,
// but on a store that is unavailable, or at a cap any client can reach,
// only the first of each cause and window, the others counted as the 421s
// and 429s are.
func (s *Server) logInFull(body Error, c echo.Context) bool {
	if body.Code != store.EUNAVAILABLE && body.Code != store.EINSUFFICIENTSTORAGE && body.Code != codeUnavailable {
		return true
	}
	d, key := &s.storeDown, [2]string{body.Code, body.Message}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m[key] == nil && len(d.m) >= 64 {
		// Bounded, whatever the messages; a summary dropped still writes its
		// count when its window ends (its timer holds it), and a cause seen
		// after a long run is logged in full again rather than never.
		clear(d.m)
	}
	sum := d.m[key]
	if sum == nil {
		if d.m == nil {
			d.m = map[[2]string]*accesslog.Summary{}
		}
		sum = accesslog.NewSummary(s.log.With("cause", key[1]), "requests failed with "+key[0], summaryWindow)
		d.m[key] = sum
	}
	return sum.Add(c.RealIP())
}

// classify turns any error into the Error body that describes it to a client.
func (s *Server) classify(err error, c echo.Context) Error {
	var (
		appErr  *store.Error
		httpErr *echo.HTTPError
		reqErr  *openapi3filter.RequestError
		secErr  *openapi3filter.SecurityRequirementsError
	)
	// A lock-out, also when kin-openapi's security error wraps it.
	var locked *errTooManyFailures
	if errors.As(err, &locked) {
		c.Response().Header().Set("Retry-After", strconv.Itoa(locked.retryAfter))
		return newError(codeRateLimited, locked.Error())
	}
	switch {
	case errors.As(err, &appErr):
		status, ok := statusOf[appErr.Code]
		if !ok || status == http.StatusInternalServerError {
			return internalError()
		}
		return Error{Code: appErr.Code, Message: appErr.Message, Status: status}
	case errors.As(err, &secErr):
		return newError(codeUnauthorized, s.unauthorizedMessage(c))
	case errors.As(err, &reqErr):
		return requestErrorBody(reqErr)
	case errors.As(err, &httpErr):
		return s.echoErrorBody(httpErr, c)
	default:
		return internalError()
	}
}

func newError(code, message string) Error {
	return Error{Code: code, Message: message, Status: statusOf[code]}
}

func internalError() Error {
	return newError(store.EINTERNAL, "internal error; the request id in X-Request-Id identifies it in the server log")
}

func (s *Server) unauthorizedMessage(c echo.Context) string {
	if tokenPath(c.Path()) {
		return "this route needs the admin token in an Authorization: Bearer header"
	}
	if n := len(c.Request().Header.Values(headerAPIKey)); n > 1 {
		return fmt.Sprintf("send one API key in X-API-Key, not %d", n)
	}
	if c.Request().Header.Get(headerAPIKey) == "" {
		return "writes need an API key in the X-API-Key header; create one in the dashboard"
	}
	return "the API key in X-API-Key is not valid (unknown or revoked)"
}

// echoErrorBody describes an *echo.HTTPError: the router's 404 and 405,
// this package's echo.ErrNotFound, and others by status.
func (s *Server) echoErrorBody(he *echo.HTTPError, c echo.Context) Error {
	req := c.Request()
	switch he.Code {
	case http.StatusNotFound:
		return newError(store.ENOTFOUND, fmt.Sprintf("no route for %s %s", req.Method, req.URL.Path))
	case http.StatusMethodNotAllowed:
		msg := fmt.Sprintf("%s is not allowed on %s", req.Method, req.URL.Path)
		// Echo's router has set Allow to the path's methods.
		if allow := c.Response().Header().Get(echo.HeaderAllow); allow != "" {
			msg += "; allowed: " + allow
		}
		return newError(codeMethodNotAllowed, msg)
	}
	code, ok := codeOfStatus[he.Code]
	if !ok {
		return internalError()
	}
	msg := http.StatusText(he.Code)
	if m, ok := he.Message.(string); ok && m != "" {
		msg = m
	}
	return newError(code, msg)
}

// requestErrorBody turns a kin-openapi validation failure into a message
// naming the parameter or body field.
func requestErrorBody(e *openapi3filter.RequestError) Error {
	if strings.HasPrefix(e.Reason, "header Content-Type has unexpected value") {
		ct := e.Input.Request.Header.Get(echo.HeaderContentType)
		if ct == "" {
			return newError(codeUnsupportedMediaType, "the body needs Content-Type: application/json")
		}
		return newError(codeUnsupportedMediaType, fmt.Sprintf("Content-Type %q is not supported; send application/json", ct))
	}
	var where string
	switch {
	case e.Parameter != nil:
		where = fmt.Sprintf("%s parameter %q", e.Parameter.In, e.Parameter.Name)
	case e.RequestBody != nil:
		where = "body"
	default:
		return newError(store.EINVALID, e.Error())
	}
	if errors.Is(e.Err, openapi3filter.ErrInvalidRequired) {
		return newError(store.EINVALID, where+": is required")
	}
	if errors.Is(e.Err, openapi3filter.ErrInvalidEmptyValue) {
		return newError(store.EINVALID, where+": must not be empty")
	}
	var ne *numberError
	if errors.As(e.Err, &ne) {
		return newError(store.EINVALID, strings.Join(append([]string{where}, ne.pointer...), ".")+": "+ne.Error())
	}
	var schemaErr *openapi3.SchemaError
	if errors.As(e.Err, &schemaErr) {
		ptr := schemaErr.JSONPointer()
		if e.Parameter != nil {
			ptr = nil // an item's index: the parameter is named, as for an item that does not parse
		}
		if missing, ok := missingFields(schemaErr); ok {
			// The pointer ends with the first missing field; the message is about
			// the object.
			return newError(store.EINVALID, strings.Join(append([]string{where}, ptr[:max(len(ptr)-1, 0)]...), ".")+": "+missing)
		}
		return newError(store.EINVALID, strings.Join(append([]string{where}, ptr...), ".")+": "+schemaReason(schemaErr))
	}
	var parseErr *openapi3filter.ParseError
	if errors.As(e.Err, &parseErr) {
		if e.RequestBody != nil {
			return newError(store.EINVALID, "body: malformed JSON")
		}
		if p := e.Parameter; p.Schema != nil {
			s, raw := p.Schema.Value, strings.Join(e.Input.Request.URL.Query()[p.Name], ",")
			if p.In == openapi3.ParameterInPath {
				raw = e.Input.PathParams[p.Name]
			}
			if s != nil && s.Type.Is(openapi3.TypeArray) && s.Items != nil {
				s = s.Items.Value // the error is about an item, with no reason from kin-openapi
			}
			if isInteger(s) {
				return newError(store.EINVALID, where+": "+integerReason(s, raw))
			}
			if s != nil && s.Type.Is(openapi3.TypeBoolean) {
				return newError(store.EINVALID, where+": must be true or false")
			}
		}
		return newError(store.EINVALID, where+": "+parseErr.Reason)
	}
	reason := e.Reason
	if reason == "" && e.Err != nil {
		reason = e.Err.Error()
	}
	return newError(store.EINVALID, where+": "+reason)
}

func requestID(c echo.Context) string {
	if v := c.Response().Header()[echo.HeaderXRequestID]; len(v) > 0 { // the key is canonical
		return v[0]
	}
	return ""
}
