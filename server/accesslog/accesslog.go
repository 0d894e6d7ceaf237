// Package accesslog is the service's log output: the writer every line
// goes through, which never makes a request wait, and the access log.
package accesslog

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Line is what the access log says about one request.
type Line struct {
	Level                            slog.Level
	RequestID, Method, Route, Remote string
	Status                           int
	Bytes                            int64
	Duration                         time.Duration
}

// Attrs are the line's attributes as a slog record carries them, in the
// Logger's order.
func (l Line) Attrs() []slog.Attr {
	return []slog.Attr{
		slog.String("request_id", l.RequestID),
		slog.String("method", l.Method),
		slog.String("route", l.Route),
		slog.Int("status", l.Status),
		slog.Int64("bytes", l.Bytes),
		slog.Duration("duration", l.Duration),
		slog.String("remote", l.Remote),
	}
}

// Logger writes access lines straight to the log's output, byte for byte
// as slog's TextHandler or JSONHandler would, at a few appends where slog
// costs a noticeable share of a small request. Lines needing quoting go
// through slog, so that its quoting rules stay its own.
type Logger struct {
	w    io.Writer // safe for concurrent use; each line is one Write
	json bool
	slog slog.Handler // on w, in the same format
	bufs sync.Pool
	// second is the text of the last line's second (appendTime).
	second atomic.Pointer[second]
}

// New returns a Logger writing to w in slog's text format, or its JSON
// format when json is set.
func New(w io.Writer, json bool) *Logger {
	a := &Logger{w: w, json: json, bufs: sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}}
	a.slog = slog.NewTextHandler(w, nil)
	if json {
		a.slog = slog.NewJSONHandler(w, nil)
	}
	return a
}

// Log writes l with t as its time.
func (a *Logger) Log(t time.Time, l Line) {
	if !plain(l.RequestID) || !plain(l.Method) || !plain(l.Route) || !plain(l.Remote) {
		r := slog.NewRecord(t, l.Level, "request", 0)
		r.AddAttrs(l.Attrs()...)
		_ = a.slog.Handle(context.Background(), r)
		return
	}
	bp := a.bufs.Get().(*[]byte)
	b := (*bp)[:0]
	if a.json {
		b = a.appendJSONLine(b, t, l)
	} else {
		b = a.appendTextLine(b, t, l)
	}
	_, _ = a.w.Write(b)
	*bp = b
	a.bufs.Put(bp)
}

func (a *Logger) appendTextLine(b []byte, t time.Time, l Line) []byte {
	b = append(b, "time="...)
	b = a.appendTime(b, t, true)
	b = append(b, " level="...)
	b = append(b, l.Level.String()...)
	b = append(b, " msg=request request_id="...)
	b = appendTextString(b, l.RequestID)
	b = append(b, " method="...)
	b = appendTextString(b, l.Method)
	b = append(b, " route="...)
	b = appendTextString(b, l.Route)
	b = append(b, " status="...)
	b = strconv.AppendInt(b, int64(l.Status), 10)
	b = append(b, " bytes="...)
	b = strconv.AppendInt(b, l.Bytes, 10)
	b = append(b, " duration="...)
	b = append(b, l.Duration.String()...)
	b = append(b, " remote="...)
	b = appendTextString(b, l.Remote)
	return append(b, '\n')
}

func (a *Logger) appendJSONLine(b []byte, t time.Time, l Line) []byte {
	b = append(b, `{"time":"`...)
	b = a.appendTime(b, t, false)
	b = append(b, `","level":"`...)
	b = append(b, l.Level.String()...)
	b = append(b, `","msg":"request","request_id":`...)
	b = strconv.AppendQuote(b, l.RequestID)
	b = append(b, `,"method":`...)
	b = strconv.AppendQuote(b, l.Method)
	b = append(b, `,"route":`...)
	b = strconv.AppendQuote(b, l.Route)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(l.Status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, l.Bytes, 10)
	// As slog's JSONHandler (and encoding/json): nanoseconds.
	b = append(b, `,"duration":`...)
	b = strconv.AppendInt(b, int64(l.Duration), 10)
	b = append(b, `,"remote":`...)
	b = strconv.AppendQuote(b, l.Remote)
	return append(b, "}\n"...)
}

// second is a time's text that changes once a second, formatted once for
// all lines of that second: formatting a time is most of a line's cost.
type second struct {
	unix int64
	loc  *time.Location
	date []byte // 2006-01-02T15:04:05
	zone []byte // Z07:00
}

// appendTime appends t in RFC 3339: three fraction digits (millis, as
// slog's TextHandler), or as time.RFC3339Nano (slog's JSONHandler).
func (a *Logger) appendTime(b []byte, t time.Time, millis bool) []byte {
	s := a.second.Load()
	if s == nil || s.unix != t.Unix() || s.loc != t.Location() {
		s = &second{unix: t.Unix(), loc: t.Location(), date: t.AppendFormat(nil, "2006-01-02T15:04:05"), zone: t.AppendFormat(nil, "Z07:00")}
		a.second.Store(s)
	}
	b = append(b, s.date...)
	if ns := t.Nanosecond(); millis {
		b = appendDigits(append(b, '.'), ns/1e6, 3)
	} else if ns != 0 {
		// RFC3339Nano: nine digits, less their trailing zeros.
		b = appendDigits(append(b, '.'), ns, 9)
		for b[len(b)-1] == '0' {
			b = b[:len(b)-1]
		}
	}
	return append(b, s.zone...)
}

// appendDigits appends v, below 10^n, as n decimal digits.
func appendDigits(b []byte, v, n int) []byte {
	b = append(b, make([]byte, n)...)
	for i := len(b) - 1; i >= len(b)-n; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return b
}

// appendTextString is a plain string as slog's TextHandler writes it: as
// is, or "" when empty.
func appendTextString(b []byte, s string) []byte {
	if s == "" {
		return append(b, `""`...)
	}
	return append(b, s...)
}

// plain reports whether both formats write s as is: printable ASCII
// without space, '=' or '"'.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '=' || c == '"' {
			return false
		}
	}
	return true
}
