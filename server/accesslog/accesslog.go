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
	b := a.appendLine((*bp)[:0], t, l)
	_, _ = a.w.Write(b)
	*bp = b
	a.bufs.Put(bp)
}

// lineText is what a line has around its values, in slog's text format
// and in its JSON one.
var lineText = [2][10]string{
	{"time=", " level=", " msg=request request_id=", " method=", " route=", " status=", " bytes=", " duration=", " remote=", "\n"},
	{`{"time":"`, `","level":"`, `","msg":"request","request_id":`, `,"method":`, `,"route":`, `,"status":`, `,"bytes":`, `,"duration":`, `,"remote":`, "}\n"},
}

func (a *Logger) appendLine(b []byte, t time.Time, l Line) []byte {
	text, str := &lineText[0], appendTextString
	if a.json {
		text, str = &lineText[1], strconv.AppendQuote
	}
	b = a.appendTime(append(b, text[0]...), t, !a.json)
	b = append(append(b, text[1]...), l.Level.String()...)
	b = str(append(b, text[2]...), l.RequestID)
	b = str(append(b, text[3]...), l.Method)
	b = str(append(b, text[4]...), l.Route)
	b = strconv.AppendInt(append(b, text[5]...), int64(l.Status), 10)
	b = strconv.AppendInt(append(b, text[6]...), l.Bytes, 10)
	if b = append(b, text[7]...); a.json {
		// As slog's JSONHandler (and encoding/json): nanoseconds.
		b = strconv.AppendInt(b, int64(l.Duration), 10)
	} else {
		b = append(b, l.Duration.String()...)
	}
	b = str(append(b, text[8]...), l.Remote)
	return append(b, text[9]...)
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
