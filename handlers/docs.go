package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"petstore/handlers/buildinfo"
	"petstore/store"
)

// serveDoc serves an OpenAPI document kept in memory since start.
func (s *Server) serveDoc(body []byte, contentType string) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderCacheControl, "no-cache")
		return c.Blob(http.StatusOK, contentType, body)
	}
}

// health is /healthz's answer: the process is up, and which build it runs
// (the admin document's Build schema).
type health struct {
	Status  string          `json:"status"`
	Version buildinfo.Build `json:"version"`
}

// healthz says the process is up, and which build; it touches nothing else.
func (s *Server) healthz(c echo.Context) error {
	return respond(c, http.StatusOK, health{Status: "ok", Version: buildinfo.Running})
}

// readyz says the store is ready, as its Ping judges: the bbolt store reads
// and, while its writes fail, tries one; the PostgreSQL store reaches its pool.
func (s *Server) readyz(c echo.Context) error {
	if err := s.store.Ping(c.Request().Context()); err != nil {
		if store.ErrorCode(err) == store.EUNAVAILABLE {
			return err // says why; the store logs when the reason changes
		}
		s.log.Error("readiness check failed", "err", err)
		return apiError(codeUnavailable, "the data store is not ready")
	}
	return respond(c, http.StatusOK, map[string]string{"status": "ready"})
}
