package listen

import (
	"crypto/tls"
	"log"
	"net/http"
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
