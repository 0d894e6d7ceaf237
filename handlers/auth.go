package handlers

import (
	"context"
	"errors"
	"strings"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"

	"petstore/store"
)

const (
	headerAPIKey = "X-API-Key"
	// Security scheme names, as the two OpenAPI documents declare them.
	schemeAPIKey     = "ApiKeyAuth"
	schemeAdminToken = "AdminToken"
)

var errBadCredentials = errors.New("missing or invalid credentials")

// keyChecker is a store that looks keys up in a database shared by several
// instances (PostgreSQL), where a cache could miss a new key or keep a
// revoked one.
type keyChecker interface {
	CheckAPIKey(ctx context.Context, secret string) (store.APIKey, bool, error)
}

// authenticate is kin-openapi's AuthenticationFunc: the spec says which
// operations need which credential, and this checks the credential.
func (s *Server) authenticate(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	req := in.RequestValidationInput.Request
	switch in.SecuritySchemeName {
	case schemeAPIKey:
		if kc, ok := s.store.(keyChecker); ok {
			// An error is the database's (503), not the client's: it must
			// not count as a failed credential.
			if _, ok, err := kc.CheckAPIKey(req.Context(), req.Header.Get(headerAPIKey)); ok || err != nil {
				return err
			}
			break
		}
		if _, ok := s.store.AuthenticateAPIKey(req.Header.Get(headerAPIKey)); ok {
			return nil
		}
	case schemeAdminToken:
		if s.store.CheckAdminToken(bearerToken(req.Header.Get(echo.HeaderAuthorization))) {
			return nil
		}
	}
	return s.failures.refuse(req, errBadCredentials)
}

func bearerToken(h string) string {
	const prefix = "bearer "
	if len(h) > len(prefix) && strings.EqualFold(h[:len(prefix)], prefix) {
		return strings.TrimSpace(h[len(prefix):])
	}
	return ""
}
