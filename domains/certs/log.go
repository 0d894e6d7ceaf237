package certs

import (
	"context"
	"log/slog"

	"github.com/caddyserver/certmagic"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapToSlog gives certmagic, which logs through zap, a logger that writes
// to the service's slog handler, so its warnings land in the same log.
// Info and debug lines are dropped: certmagic is chatty, and the domain
// states already say what happened.
func zapToSlog(l *slog.Logger) *zap.Logger {
	return zap.New(slogCore{l: l.With("component", "certmagic")})
}

// certmagic's package default logger, which a Config or issuer made
// without one of this package's loggers falls back to, writes to stderr;
// it writes to the process's default slog logger instead, which the
// service sets to its own (main.go).
func init() {
	certmagic.Default.Logger = zap.New(slogCore{})
}

// slogCore keeps With's fields as they are and converts them only when a
// line is written: certmagic calls With on every handshake for lines that
// are then dropped, and converting there would cost every handshake.
type slogCore struct {
	// l is the logger written to; nil is slog's default at the time of
	// writing.
	l      *slog.Logger
	fields []zapcore.Field
}

func (c slogCore) Enabled(lvl zapcore.Level) bool { return lvl >= zapcore.WarnLevel }

func (c slogCore) With(fields []zapcore.Field) zapcore.Core {
	return slogCore{l: c.l, fields: append(c.fields[:len(c.fields):len(c.fields)], fields...)}
}

func (c slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	level := slog.LevelWarn
	if e.Level >= zapcore.ErrorLevel {
		level = slog.LevelError
	}
	args := attrs(append(c.fields[:len(c.fields):len(c.fields)], fields...))
	if e.LoggerName != "" {
		args = append(args, "logger", e.LoggerName)
	}
	l := c.l
	if l == nil {
		l = slog.Default().With("component", "certmagic")
	}
	l.Log(context.Background(), level, e.Message, args...)
	return nil
}

func (c slogCore) Sync() error { return nil }

func attrs(fields []zapcore.Field) []any {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	out := make([]any, 0, 2*len(enc.Fields))
	for k, v := range enc.Fields {
		out = append(out, k, v)
	}
	return out
}
