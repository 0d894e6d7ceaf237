package server

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"
)

// TestQuietShutdownWarnsNothing: a shutdown with no request in flight ends
// at once and logs nothing. net/http's Shutdown also closes the listeners
// Serve still tracks, and a second Close of a closed socket fails; that
// error once made an idle shutdown warn that its timeout had passed. The
// race is Serve's, so the test shuts down many times.
func TestQuietShutdownWarnsNothing(t *testing.T) {
	for i := range 40 {
		guard, _, err := NewConnGuard(0)
		if err != nil {
			t.Fatal(err)
		}
		l := NewListeners(guard)
		if _, err := l.ListenAs("", "127.0.0.1:0", &http.Server{Handler: http.NotFoundHandler()}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- l.Serve(ctx) }()
		cancel()
		if err := <-served; err != nil {
			t.Fatal(err)
		}
		var logged bytes.Buffer
		aborted := false
		start := time.Now()
		l.Shutdown(time.Minute, func() { aborted = true }, slog.New(slog.NewTextHandler(&logged, nil)))
		if logged.Len() > 0 || aborted {
			t.Fatalf("shutdown %d with nothing in flight logged %q (aborted: %v) after %v", i, logged.String(), aborted, time.Since(start))
		}
	}
}
