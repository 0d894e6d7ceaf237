package handlers

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"petstore/store"
)

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
	return sendAnswer(c, apiKeyCreated, &store.IssuedAPIKey{APIKey: key, Secret: secret})
}

// apiKeyCreated is the answer to POST /admin/api-keys: the only one that
// shows the secret (an Idempotency-Key keeps it sealed).
func apiKeyCreated(record any) (answer, error) {
	k := record.(*store.IssuedAPIKey)
	return answerJSON(http.StatusCreated, fmt.Sprintf("/admin/api-keys/%d", k.ID), k)
}
