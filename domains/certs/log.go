package certs

import (
	"context"
	"log/slog"

	"github.com/caddyserver/certmagic"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapToSlog gives certmagic a zap logger writing warnings to the service's
// slog handler; info and debug are chatty, and domain states say enough.
func zapToSlog(l *slog.Logger) *zap.Logger {
	return zap.New(slogCore{l: l.With("component", "certmagic")})
}

// certmagic's package default logger, used by Configs made without ours,
// writes to slog's default logger (main.go sets it), not stderr.
func init() {
	certmagic.Default.Logger = zap.New(slogCore{})
}

// slogCore keeps With's fields unconverted until a line is written:
// certmagic calls With on every handshake for lines then dropped.
type slogCore struct {
	// l is the logger written to; nil is slog's default when writing.
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
