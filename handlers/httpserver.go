package handlers

import (
	"context"
	"crypto/tls"
	"log"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// NewHTTPServer returns an http.Server with the service's connection
// limits, for every listener: a client that never finishes its headers is
// dropped after ReadHeaderTimeout, idle keep-alive connections after
// IdleTimeout. tc is nil for plain HTTP.
func NewHTTPServer(h http.Handler, tc *tls.Config, errorLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		TLSConfig:         tc,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		// Above the service's own limit (MaxHeaderBytes), so that oversized
		// headers get its 431 Error body rather than net/http's plain text.
		MaxHeaderBytes: 1 << 20,
		ErrorLog:       errorLog,
	}
}

// Shutdown stops the servers together: they stop accepting, and the
// requests in flight get until timeout to finish. Past it, abort is called
// (it stops backups in flight, whose read transactions would otherwise keep
// the data file from closing) and every connection left is closed, so that
// shutdown ends soon after timeout whatever clients do.
func (l *Listeners) Shutdown(timeout time.Duration, abort func(), log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var wg sync.WaitGroup
	var unfinished atomic.Bool
	for _, one := range l.list {
		wg.Go(func() {
			if one.srv.Shutdown(ctx) != nil {
				unfinished.Store(true)
			}
		})
	}
	wg.Wait()
	if !unfinished.Load() {
		return
	}
	log.Warn("shutdown timeout passed: aborting backups in flight and closing the connections left", "timeout", timeout)
	abort()
	for _, one := range l.list {
		_ = one.srv.Close()
	}
}
