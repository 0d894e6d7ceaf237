package handlers

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

func (s *Server) listAPIKeys(c echo.Context) error {
	p, err := page(c)
	if err != nil {
		return err
	}
	keys, next, err := s.store.APIKeys(c.Request().Context(), p)
	if err != nil {
		return err
	}
	return respondList(c, keys, next)
}

// newAPIKey is the answer to a create: the only time the secret is shown.
type newAPIKey struct {
	store.APIKey
	Secret string `json:"secret"`
}

func (s *Server) createAPIKey(c echo.Context) error {
	var in struct {
		Name string `json:"name"`
	}
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	name := strings.TrimSpace(in.Name)
	if name == "" {
		return apiError(store.EINVALID, "body.name: must not be blank")
	}
	key, secret, err := s.store.CreateAPIKey(c.Request().Context(), name)
	if err != nil {
		return err
	}
	return respondCreated(c, fmt.Sprintf("/admin/api-keys/%d", key.ID), newAPIKey{APIKey: key, Secret: secret})
}

func (s *Server) revokeAPIKey(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	if err := s.store.RevokeAPIKey(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
