package handlers

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"

	"petstore/server/accesslog"
	"petstore/store"
)

// requestID gives every response an X-Request-Id: the client's own when it
// is a short plain token, else a new one.
func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		var v []string
		if id := c.Request().Header[echo.HeaderXRequestID]; len(id) > 0 && plainToken(id[0]) {
			v = headerValue(id[0])
		} else {
			v = newRequestID()
		}
		c.Response().Header()[echo.HeaderXRequestID] = v // the key is canonical
		return next(c)
	}
}

// newRequestID returns 24 random hex digits as a header value. A request
// id needs no secrecy, so math/rand/v2 (no system call) is enough.
func newRequestID() []string {
	var b [12]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint32(b[8:], rand.Uint32())
	var digits [2 * len(b)]byte
	hex.Encode(digits[:], b[:])
	return headerValue(string(digits[:]))
}

func plainToken(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// accessLog writes one line per request and counts it in the metrics.
// Floodable refusals (421, 429) are summarized a line a minute, abandoned
// requests (499) logged at debug. It calls the error handler itself, for
// the final status. Headers, which carry credentials, are never logged.
func (s *Server) accessLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		if err := next(c); err != nil {
			c.Error(err)
		}
		res, req := c.Response(), c.Request()
		took := time.Since(start) // one clock reading where time.Now takes two
		line := accesslog.Line{
			Level:     slog.LevelInfo,
			RequestID: requestID(c),
			Method:    req.Method,
			Route:     c.Path(),
			Status:    res.Status,
			Bytes:     res.Size,
			Duration:  took,
			Remote:    c.RealIP(),
		}
		s.cfg.Metrics.Observe(line.Method, line.Route, line.Status, line.Duration)
		if isProbe(line.Route) {
			// Balancers probe several times a second: the metrics count probes, and
			// readiness changes are logged (readyz, the store).
			return nil
		}
		switch {
		case line.Status == http.StatusMisdirectedRequest:
			s.unknownHosts.Add(line.Remote)
			return nil
		case line.Status == http.StatusTooManyRequests:
			s.refusedByRate.Add(line.Remote)
			return nil
		case line.Status == statusClientClosed:
			line.Level = slog.LevelDebug
			if !s.log.Enabled(req.Context(), slog.LevelDebug) {
				return nil
			}
		case line.Status >= 500:
			line.Level = slog.LevelError
		}
		if s.access != nil {
			s.access.Log(start.Add(took), line)
			return nil
		}
		// The attributes allocate: only for a handler that keeps the line.
		if ctx := req.Context(); s.log.Enabled(ctx, line.Level) {
			s.log.LogAttrs(ctx, line.Level, "request", line.Attrs()...)
		}
		return nil
	}
}

// isProbe says that route (or a path) is a liveness or readiness probe.
func isProbe(route string) bool { return route == "/healthz" || route == "/readyz" }

// recoverPanics turns a panic into a 500 Error body, logged with its stack
// and the request id; the client learns nothing of the internals.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				buf := make([]byte, 8<<10)
				buf = buf[:runtime.Stack(buf, false)]
				s.log.Error("panic", "request_id", requestID(c), "panic", fmt.Sprint(r), "stack", string(buf))
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return next(c)
	}
}

// validate checks the request against its OpenAPI operation: security,
// parameters, body, no undefined or repeated query parameters, and
// strings that both stores keep.
func (s *Server) validate(op *routers.Route) echo.MiddlewareFunc {
	quick := newQuickCheck(op, &s.valOpts)
	known, single := queryParameters(op)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if quick != nil && quick.passes(c) {
				return next(c)
			}
			if err := checkEnvelope(c.Request(), op); err != nil {
				return err
			}
			names, values := c.ParamNames(), c.ParamValues()
			params := make(map[string]string, len(names))
			for i, n := range names {
				params[n] = values[i] // Echo's ParamValues are as many as its names
			}
			req := c.Request()
			if op.Operation.RequestBody == nil && req.Body != nil && req.Body != http.NoBody {
				// The security check would read a body of any length into memory; for
				// an operation taking none, refuseBody answers after the credential.
				noBody := *req
				noBody.Body = http.NoBody
				req = &noBody
			}
			in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: op, Options: &s.valOpts}
			// The security check comes first: a request it refuses costs no scan
			// of its body. Then the first failure in this order is the answer.
			if err := openapi3filter.ValidateRequest(req.Context(), in); err != nil {
				return err
			}
			if err := cmp.Or(refuseUnknownQuery(c.QueryParams(), known), refuseRepeatedQuery(c.QueryParams(), single), refuseUnstorableText(c)); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// checkEnvelope refuses what the validator lets through unseen: a query
// that does not parse (url.Values drops broken pairs, so a malformed limit
// would become the default), and a Content-Encoding this service does not
// decode (gzip would be judged malformed JSON, misleading the client).
func checkEnvelope(req *http.Request, op *routers.Route) error {
	if _, err := url.ParseQuery(req.URL.RawQuery); err != nil {
		return apiError(store.EINVALID, "query string: %v", err)
	}
	if op.Operation.RequestBody == nil {
		return nil
	}
	for _, v := range req.Header.Values(echo.HeaderContentEncoding) {
		for _, coding := range strings.Split(v, ",") {
			if coding = strings.TrimSpace(coding); coding != "" && !strings.EqualFold(coding, "identity") {
				return apiError(codeUnsupportedMediaType, "Content-Encoding %q is not supported; send the body uncompressed", coding)
			}
		}
	}
	return nil
}

// limitHeaders answers 431 to a request whose target and headers exceed
// the limit its http.Server was given (server.MaxHeaderBytes), which
// net/http reads a little past, so that requests just over get this
// Error body, not net/http's plain text.
func limitHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server)
		if !ok {
			return next(c)
		}
		limit := cmp.Or(srv.MaxHeaderBytes, http.DefaultMaxHeaderBytes)
		n := len(r.Method) + len(r.RequestURI) + len(r.Host)
		for k, vs := range r.Header {
			for _, v := range vs {
				n += len(k) + len(v) + 4
			}
		}
		if n > limit {
			return apiError(codeHeadersTooLarge, "the request target and headers take %d bytes; the limit is %d KiB", n, limit>>10)
		}
		return next(c)
	}
}
