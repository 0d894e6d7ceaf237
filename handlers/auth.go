package handlers

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"

	"petstore/server/clientkey"
	"petstore/store"
)

const (
	headerAPIKey = "X-API-Key"
	// Security scheme names, as the two OpenAPI documents declare them.
	schemeAPIKey     = "ApiKeyAuth"
	schemeAdminToken = "AdminToken"
)

var errBadCredentials = errors.New("missing or invalid credentials")

// authenticate is kin-openapi's AuthenticationFunc: the spec says which
// credential an operation needs; this checks it.
func (s *Server) authenticate(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	req := in.RequestValidationInput.Request
	switch in.SecuritySchemeName {
	case schemeAPIKey:
		if kc := s.cfg.Shared; kc != nil {
			if !s.failures.mayLookUp(clientkey.Of(req.RemoteAddr), time.Now()) {
				// Not counted as a failure: it was not checked.
				return &errTooManyFailures{retryAfter: int(lockedLookupInterval / time.Second)}
			}
			// A database error is a 503, not a failed credential.
			if _, ok, err := kc.CheckAPIKey(req.Context(), credential(req.Header, headerAPIKey)); ok || err != nil {
				return err
			}
			break
		}
		if _, ok := s.store.AuthenticateAPIKey(credential(req.Header, headerAPIKey)); ok {
			return nil
		}
	case schemeAdminToken:
		if err := s.checkAdminToken(req); err != errBadCredentials {
			return err
		}
	}
	return s.failures.refuse(req, errBadCredentials)
}

// checkAdminToken checks a request's admin token: nil when right,
// errBadCredentials when wrong or missing, or database_unavailable (503,
// not a failure) while the store cannot know the token yet or has not
// stored the one given at start.
func (s *Server) checkAdminToken(req *http.Request) error {
	token := bearerToken(credential(req.Header, echo.HeaderAuthorization))
	if s.store.CheckAdminToken(token) {
		return nil
	}
	if tl := s.cfg.Shared; tl != nil && token != "" {
		if err := tl.AdminTokenKnown(); err != nil {
			return err
		}
	}
	if p := s.awaitedToken.Load(); p != nil && *p != "" && subtle.ConstantTimeCompare([]byte(token), []byte(*p)) == 1 {
		return errTokenNotStored
	}
	return errBadCredentials
}

// AwaitAdminToken makes token, given at start but not stored yet (the
// database did not take start-up's writes, which go on in the background),
// a 503 that says so rather than a 401, and /readyz 503, until it is
// called with "" once the token is stored: the banner promised it works.
func (s *Server) AwaitAdminToken(token string) { s.awaitedToken.Store(&token) }

var errTokenNotStored = store.Errorf(store.EUNAVAILABLE, "the admin token given at start is not stored yet: the database has not taken start-up's writes, which are retried; retry after the seconds in Retry-After")

// credential is a credential header's one value, or "" when it is missing
// or sent more than once: a proxy that reads another of the values than
// this service would check another credential.
func credential(h http.Header, name string) string {
	if v := h.Values(name); len(v) == 1 {
		return v[0]
	}
	return ""
}

func bearerToken(h string) string {
	const prefix = "bearer "
	if len(h) > len(prefix) && strings.EqualFold(h[:len(prefix)], prefix) {
		return strings.TrimSpace(h[len(prefix):])
	}
	return ""
}
