package server

import (
	"crypto/tls"
	"log"
	"net/http"
	"time"
)

// DefaultHeaderTimeout is how long a client may take to send its request
// line and headers before its connection is closed.
const DefaultHeaderTimeout = 10 * time.Second

// MaxHeaderBytes is what net/http reads of a request's line and headers,
// over HTTP/1 and HTTP/2 (its maximum header list size) alike. It is the
// service's own documented limit (handlers.MaxHeaderBytes, which answers
// 431 as an Error body): net/http reads 4 KiB more than this before it
// answers its own plain-text 431, so a request just past the limit gets
// the service's answer, and a half-sent header costs at most this much.
const MaxHeaderBytes = 64 << 10

// NewHTTPServer returns an http.Server with the service's connection
// limits, for every listener: a client that never finishes its headers is
// dropped after DefaultHeaderTimeout, idle keep-alive connections after
// IdleTimeout. tc is nil for plain HTTP.
//
// HTTP/2 (over TLS) gets limits of its own: 100 streams at once per
// connection, and a connection whose writes stall is closed. A stream
// whose client keeps its flow-control window shut blocks only its own
// handler, until the write deadline of its answer (the in-flight cap of
// package handlers sets a short one on every capped answer).
func NewHTTPServer(h http.Handler, tc *tls.Config, errorLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		TLSConfig:         tc,
		ReadHeaderTimeout: DefaultHeaderTimeout,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    MaxHeaderBytes,
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams: 100,
			// A connection to which nothing can be written for this long
			// is dead or hostile.
			WriteByteTimeout: 30 * time.Second,
		},
		ErrorLog: errorLog,
	}
}
