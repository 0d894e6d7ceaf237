package server

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
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

// TestShutdownAnswersARequestNotReadYet: a request sent on a connection the
// server accepted but had not read when shutdown began (its goroutine not
// yet run, as on a loaded machine) is answered, and a connection that sent
// nothing does not hold shutdown. net/http's own Shutdown closes such a
// connection unanswered once it is 5 seconds old, and drops the request if
// it reads it after Shutdown began.
func TestShutdownAnswersARequestNotReadYet(t *testing.T) {
	t.Parallel()
	t.Run("plain", func(t *testing.T) { t.Parallel(); shutdownWithRequestNotRead(t, "") })
	// The PROXY protocol's reader takes the request with the header,
	// before the server reads: no peek into the socket sees it.
	t.Run("PROXY protocol", func(t *testing.T) {
		t.Parallel()
		shutdownWithRequestNotRead(t, "PROXY TCP4 192.0.2.1 127.0.0.1 40000 80\r\n")
	})
}

// shutdownWithRequestNotRead is the test, each connection beginning with
// header (a PROXY protocol header, or none).
func shutdownWithRequestNotRead(t *testing.T, header string) {
	guard, _, err := NewConnGuard(0)
	if err != nil {
		t.Fatal(err)
	}
	l := NewListeners(guard)
	if header != "" {
		if err := l.ReadProxyProtocolFrom([]string{"127.0.0.1"}); err != nil {
			t.Fatal(err)
		}
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "answered")
	})}
	addr, err := l.ListenAs("", "127.0.0.1:0", srv)
	if err != nil {
		t.Fatal(err)
	}
	// The second connection's server goroutine starts only when gate
	// closes, long after its request arrived.
	gate := make(chan struct{})
	var seen atomic.Int32
	var heldSince atomic.Int64
	follow := srv.ConnState
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		follow(c, st)
		if st == http.StateNew && seen.Add(1) == 2 {
			heldSince.Store(time.Now().UnixNano())
			<-gate
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- l.Serve(ctx) }()

	silent, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if _, err := io.WriteString(silent, header); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return guard.Open() == 1 })
	conn, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, header+"POST /pets HTTP/1.1\r\nHost: petstore\r\nContent-Length: 2\r\n\r\n{}"); err != nil {
		t.Fatal(err)
	}
	// Past net/http's 5 seconds for a first request, and so past the
	// patience shutdown has for the silent connection too.
	waitFor(t, func() bool {
		since := heldSince.Load()
		return since != 0 && time.Since(time.Unix(0, since)) > 5500*time.Millisecond
	})
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	aborted := false
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Shutdown(time.Minute, func() { aborted = true }, slog.New(slog.NewTextHandler(&logged, nil)))
	}()
	// Shutdown has begun once the listener refuses.
	waitFor(t, func() bool {
		c, err := net.Dial("tcp", addr.String())
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	close(gate)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the request sent before shutdown got no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "answered" || !resp.Close {
		t.Errorf("answer: %d %q, Connection: close %v; want 200 \"answered\" closing the connection", resp.StatusCode, body, resp.Close)
	}
	<-done
	if logged.Len() > 0 || aborted {
		t.Errorf("shutdown waited for its timeout (the silent connection held it): logged %q, aborted %v", logged.String(), aborted)
	}
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within a minute")
		}
	}
}
