package server

import (
	"crypto/tls"
	"log"
	"net/http"
	"time"
)

// DefaultHeaderTimeout is --header-timeout's default: how long a client
// may take to send its request line and headers.
const DefaultHeaderTimeout = 10 * time.Second

// MaxHeaderBytes is what net/http reads of a request's line and headers,
// over HTTP/1 and HTTP/2 alike. The handlers read it from the request's
// http.Server, so that a request just past it gets the service's 431 Error
// body before net/http's own plain-text one.
const MaxHeaderBytes = 64 << 10

// NewHTTPServer returns an http.Server with the service's connection
// limits (tc nil for plain HTTP) and headerTimeout for a client's request
// line and headers. Under HTTP/2 a stream whose client keeps
// its window shut blocks only its own handler, until its answer's write
// deadline.
func NewHTTPServer(h http.Handler, tc *tls.Config, errorLog *log.Logger, headerTimeout time.Duration) *http.Server {
	return &http.Server{
		Handler:           h,
		TLSConfig:         tc,
		ReadHeaderTimeout: headerTimeout,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    MaxHeaderBytes,
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams: 100,
			// Nothing written for this long: dead or hostile.
			WriteByteTimeout: 30 * time.Second,
		},
		ErrorLog: errorLog,
	}
}
