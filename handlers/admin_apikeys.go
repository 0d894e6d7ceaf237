package handlers

import (
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

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
