package handlers

import (
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// accessLine is what the access log says about one request.
type accessLine struct {
	level                            slog.Level
	requestID, method, route, remote string
	status                           int
	bytes                            int64
	duration                         time.Duration
}

// attrs are the line's attributes as a slog record carries them; the
// accessWriter writes the same ones in the same order.
func (l accessLine) attrs() []slog.Attr {
	return []slog.Attr{
		slog.String("request_id", l.requestID),
		slog.String("method", l.method),
		slog.String("route", l.route),
		slog.Int("status", l.status),
		slog.Int64("bytes", l.bytes),
		slog.Duration("duration", l.duration),
		slog.String("remote", l.remote),
	}
}

// accessWriter writes access lines straight to the log's output, byte for
// byte as slog's TextHandler or JSONHandler (default options) would write
// the same record, so that the access lines and the other lines form one
// log. Going through slog.Logger cost about a tenth of a small request (the
// caller's PC, a Record with more attributes than it holds inline, generic
// attribute encoding); this is a few appends into a pooled buffer.
type accessWriter struct {
	w    io.Writer // safe for concurrent use; each line is one Write
	json bool
	bufs sync.Pool
	// stamp is the text format's last time, kept for the lines of the same
	// millisecond (dozens of them under load): formatting a time is a
	// fifth of writing a line.
	stamp atomic.Pointer[textStamp]
}

// textStamp is a millisecond and its text form.
type textStamp struct {
	ms   int64
	text []byte
}

func newAccessWriter(w io.Writer, json bool) *accessWriter {
	return &accessWriter{w: w, json: json, bufs: sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}}
}

// write writes l with t as its time.
func (a *accessWriter) write(t time.Time, l accessLine) {
	bp := a.bufs.Get().(*[]byte)
	b := (*bp)[:0]
	if a.json {
		b = appendJSONLine(b, t, l)
	} else {
		b = appendTextLine(b, a.textTime(t), l)
	}
	_, _ = a.w.Write(b)
	*bp = b
	a.bufs.Put(bp)
}

// textTime is t as the text format writes it (appendRFC3339Millis).
func (a *accessWriter) textTime(t time.Time) []byte {
	ms := t.UnixMilli()
	if st := a.stamp.Load(); st != nil && st.ms == ms && t.Location() == time.Local {
		return st.text
	}
	st := &textStamp{ms: ms, text: appendRFC3339Millis(nil, t)}
	if t.Location() == time.Local {
		a.stamp.Store(st)
	}
	return st.text
}

func appendTextLine(b []byte, stamp []byte, l accessLine) []byte {
	b = append(b, "time="...)
	b = append(b, stamp...)
	b = append(b, " level="...)
	b = append(b, l.level.String()...)
	b = append(b, " msg=request request_id="...)
	b = appendTextString(b, l.requestID)
	b = append(b, " method="...)
	b = appendTextString(b, l.method)
	b = append(b, " route="...)
	b = appendTextString(b, l.route)
	b = append(b, " status="...)
	b = strconv.AppendInt(b, int64(l.status), 10)
	b = append(b, " bytes="...)
	b = strconv.AppendInt(b, l.bytes, 10)
	b = append(b, " duration="...)
	b = append(b, l.duration.String()...)
	b = append(b, " remote="...)
	b = appendTextString(b, l.remote)
	return append(b, '\n')
}

func appendJSONLine(b []byte, t time.Time, l accessLine) []byte {
	b = append(b, `{"time":"`...)
	b = t.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"`...)
	b = append(b, l.level.String()...)
	b = append(b, `","msg":"request","request_id":`...)
	b = appendJSONString(b, l.requestID)
	b = append(b, `,"method":`...)
	b = appendJSONString(b, l.method)
	b = append(b, `,"route":`...)
	b = appendJSONString(b, l.route)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(l.status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, l.bytes, 10)
	// As slog's JSONHandler (and encoding/json): nanoseconds.
	b = append(b, `,"duration":`...)
	b = strconv.AppendInt(b, int64(l.duration), 10)
	b = append(b, `,"remote":`...)
	b = appendJSONString(b, l.remote)
	return append(b, "}\n"...)
}

// appendRFC3339Millis is slog's TextHandler time: RFC 3339 with exactly
// three digits of fraction.
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	// RFC3339Nano trims trailing zeros: adding a tenth of a millisecond
	// keeps four digits, and the fourth is dropped.
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...)
}

// appendTextString is a string value as slog's TextHandler writes it:
// as is, or quoted when it is empty or holds a space, '=', a quote, a
// control or unprintable character, or invalid UTF-8.
func appendTextString(b []byte, s string) []byte {
	if textNeedsQuoting(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

func textNeedsQuoting(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c != '\\' && (c == ' ' || c == '=' || c == '"' || c < 0x20) {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// appendJSONString is s as a JSON string the way slog's JSONHandler writes
// it: no HTML escaping, invalid UTF-8 as U+FFFD, U+2028 and U+2029
// escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
