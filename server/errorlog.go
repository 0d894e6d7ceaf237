package server

import (
	"bytes"
	"log"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"petstore/server/accesslog"
)

// ServerErrors is the http.Servers' error log: lines go to the service's
// log as warnings, except refused TLS handshakes, which any client can
// cause by the thousand and are summarized once a minute.
type ServerErrors struct {
	log        *slog.Logger
	handshakes *accesslog.Summary
	refused    atomic.Uint64
}

// NewServerErrors returns the error log for the http.Servers, writing to log.
func NewServerErrors(log *slog.Logger) *ServerErrors {
	return &ServerErrors{log: log, handshakes: accesslog.NewSummary(log, "refused TLS handshakes", time.Minute)}
}

// Logger is the *log.Logger to give http.Server.ErrorLog.
func (e *ServerErrors) Logger() *log.Logger { return log.New(e, "", 0) }

// HandshakesRefused is how many TLS handshakes failed since the start.
func (e *ServerErrors) HandshakesRefused() uint64 { return e.refused.Load() }

const handshakeError = "http: TLS handshake error from "

// Write takes one line of an http.Server's error log.
func (e *ServerErrors) Write(p []byte) (int, error) {
	line := string(bytes.TrimRight(p, "\n"))
	if rest, ok := strings.CutPrefix(line, handshakeError); ok {
		e.refused.Add(1)
		// The client's "host:port", counted by host.
		addr, _, _ := strings.Cut(rest, ": ")
		if i := strings.LastIndexByte(addr, ':'); i > 0 {
			addr = strings.Trim(addr[:i], "[]")
		}
		e.handshakes.Add(addr)
		return len(p), nil
	}
	e.log.Warn(line)
	return len(p), nil
}
