package handlers

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

func (s *Server) createAPIKey(c echo.Context, key *store.IdempotentWrite) (store.APIKey, string, error) {
	var in struct {
		Name string `json:"name"`
	}
	if err := decodeBody(c, &in); err != nil {
		return store.APIKey{}, "", err
	}
	name := strings.TrimSpace(in.Name)
	if name == "" {
		return store.APIKey{}, "", apiError(store.EINVALID, "body.name: must not be blank")
	}
	return s.store.CreateAPIKey(c.Request().Context(), name, key)
}

// apiKeyCreated is the answer to POST /admin/api-keys: the only one that
// shows the secret (an Idempotency-Key keeps it sealed).
func apiKeyCreated(k store.APIKey, secret string) (answer, error) {
	return answerJSON(http.StatusCreated, fmt.Sprintf("/admin/api-keys/%d", k.ID), store.IssuedAPIKey{APIKey: k, Secret: secret})
}
