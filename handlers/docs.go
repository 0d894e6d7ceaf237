package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"petstore/buildinfo"
	"petstore/metrics"
	"petstore/store"
)

// serveDoc serves an OpenAPI document kept in memory since start.
func (s *Server) serveDoc(body []byte, contentType string) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderCacheControl, "no-cache")
		return c.Blob(http.StatusOK, contentType, body)
	}
}

// health is /healthz's answer: the build (the admin document's Build).
type health struct {
	Status  string          `json:"status"`
	Version buildinfo.Build `json:"version"`
}

// healthz says the process is up, and which build; it touches nothing else.
func (s *Server) healthz(c echo.Context) error {
	return respond(c, http.StatusOK, health{Status: "ok", Version: buildinfo.Running})
}

// readyz says the store is ready, as its Ping judges, and takes the admin
// token given at start (another instance may have stored it first).
func (s *Server) readyz(c echo.Context) error {
	if s.draining.Load() {
		return apiError(codeUnavailable, "shutting down: this process finishes its requests and takes no new ones")
	}
	if err := s.store.Ping(c.Request().Context()); err != nil {
		if d := s.cfg.File; d != nil && d.Damaged() != nil {
			// Logged once, when it was found (watchDamage).
			return apiError(codeUnavailable, "the data store is not ready: %v", d.Damaged())
		}
		code := store.ErrorCode(err)
		if code == store.EUNAVAILABLE {
			return err // says why; the store logs when the reason changes
		}
		// Balancers probe often: logged when readiness turns, not per probe.
		if !s.notReady.Swap(true) {
			s.log.Error("readiness check failed; /readyz answers 503 until it passes", "err", err)
		}
		if code == store.EINSUFFICIENTSTORAGE {
			return apiError(codeUnavailable, "the data store is not ready: writes fail, the disk is full")
		}
		return apiError(codeUnavailable, "the data store is not ready")
	}
	if s.notReady.Swap(false) {
		s.log.Info("readiness check passes again")
	}
	if p := s.awaitedToken.Load(); p != nil && *p != "" && !s.store.CheckAdminToken(*p) {
		return errTokenNotStored
	}
	return respond(c, http.StatusOK, map[string]string{"status": "ready"})
}

// watchDamage logs once that the store found its data damaged (/readyz
// says so on every probe), and returns petstore_store_damaged.
func (s *Server) watchDamage(d FileStore) prometheus.Collector {
	d.OnDamaged(func(err error) {
		s.log.Error("the data store is damaged; /readyz answers 503 until a restart", "err", err)
	})
	return metrics.Damage(d)
}
