package handlers

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
)

const (
	headerAPIKey = "X-API-Key"
	// Security scheme names, as the two OpenAPI documents declare them.
	schemeAPIKey     = "ApiKeyAuth"
	schemeAdminToken = "AdminToken"
)

var errBadCredentials = errors.New("missing or invalid credentials")

// authenticate is kin-openapi's AuthenticationFunc: the spec says which
// operations need which credential, and this checks the credential.
func (s *Server) authenticate(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if s.credentialOK(in.RequestValidationInput.Request, in.SecuritySchemeName) {
		return nil
	}
	return errBadCredentials
}

// credentialOK reports whether the request carries the credential of the
// named security scheme. The quick check calls it as the validator would.
func (s *Server) credentialOK(req *http.Request, scheme string) bool {
	switch scheme {
	case schemeAPIKey:
		_, ok := s.store.AuthenticateAPIKey(req.Header.Get(headerAPIKey))
		return ok
	case schemeAdminToken:
		return s.store.CheckAdminToken(bearerToken(req.Header.Get(echo.HeaderAuthorization)))
	}
	return false
}

// requireAdmin guards admin routes that are outside the admin document.
func (s *Server) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !s.store.CheckAdminToken(bearerToken(c.Request().Header.Get(echo.HeaderAuthorization))) {
			return apiError(codeUnauthorized, "this route needs the admin token in an Authorization: Bearer header")
		}
		return next(c)
	}
}

func bearerToken(h string) string {
	const prefix = "bearer "
	if len(h) > len(prefix) && strings.EqualFold(h[:len(prefix)], prefix) {
		return strings.TrimSpace(h[len(prefix):])
	}
	return ""
}
