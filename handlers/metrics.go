package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"petstore/metrics"
)

// serveMetrics answers GET /metrics. It gathers before it writes, so that a
// store that fails is answered with an Error body, not half an exposition.
func (s *Server) serveMetrics(c echo.Context) error {
	exp, err := s.cfg.Metrics.Gather()
	if err != nil {
		return err
	}
	res := c.Response()
	res.Header().Set(echo.HeaderContentType, metrics.ContentType)
	res.Header().Set("Cache-Control", "no-store")
	res.WriteHeader(http.StatusOK)
	_ = exp.Write(res) // the status is out; a client that left sees a cut answer
	return nil
}
