package domains

import (
	"log/slog"
	"testing"

	"go.uber.org/zap"
)

// TestFailedValidationsCountedPerAttempt: the ACME client's log lines of
// failed validations count towards the attempt in flight for that name,
// and the count leaves memory when the attempt ends; lines for names
// without an attempt (renewals) leave nothing behind.
func TestFailedValidationsCountedPerAttempt(t *testing.T) {
	m := &Manager{failedValidations: map[string]int{}}
	logFor := func(name string) *zap.Logger {
		return zapToSlog(slog.New(slog.DiscardHandler), m.noteFailedValidation).With(zap.String("identifier", name))
	}
	log := logFor("a.example.org")
	fail := func(l *zap.Logger) { l.Error(failedValidationMessage, zap.String("problem", "unauthorized")) }

	fail(log)
	if len(m.failedValidations) != 0 {
		t.Fatalf("without an attempt, the count holds %v", m.failedValidations)
	}
	m.countFailedValidations("a.example.org")
	fail(log)
	fail(log)
	log.Warn(failedValidationMessage)
	log.Error("another error")
	fail(logFor("b.example.org"))
	if n := m.failedValidationsCounted("a.example.org"); n != 2 {
		t.Errorf("the attempt counted %d failed validations, want 2", n)
	}
	if len(m.failedValidations) != 0 {
		t.Errorf("after the attempt, the count holds %v", m.failedValidations)
	}
}
