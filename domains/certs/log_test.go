package certs

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/caddyserver/certmagic"
	"go.uber.org/zap"
)

// TestCertmagicLogsReachSlog: warnings keep the fields given to With and at
// the call, in the service's log; info lines are dropped.
func TestCertmagicLogsReachSlog(t *testing.T) {
	var buf bytes.Buffer
	zl := zapToSlog(slog.New(slog.NewTextHandler(&buf, nil))).With(zap.String("identifier", "shop.example.com"))
	zl.Info("chatty")
	zl.Named("obtain").Warn("a warning of the library", zap.Int("attempt", 3))
	out := buf.String()
	for _, want := range []string{"a warning of the library", "identifier=shop.example.com", "attempt=3", "component=certmagic", "logger=obtain", "level=WARN"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q: %s", want, out)
		}
	}
	if strings.Contains(out, "chatty") {
		t.Errorf("an info line was logged: %s", out)
	}
}

// TestCertmagicDefaultLoggerReachesSlog: certmagic's package default
// logger, which writes to stderr as the library ships it, writes to slog's
// default logger, whatever that is when the line is written.
func TestCertmagicDefaultLoggerReachesSlog(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(prev)
	certmagic.Default.Logger.Named("maintenance").Error("a line of the default logger", zap.String("identifier", "shop.example.com"))
	out := buf.String()
	for _, want := range []string{"a line of the default logger", "identifier=shop.example.com", "component=certmagic", "logger=maintenance", "level=ERROR"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q: %s", want, out)
		}
	}
}
