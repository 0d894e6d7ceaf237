package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"petstore/store"
)

// testAdminToken is an admin token long enough for any start-up check.
const testAdminToken = "pat_test_0123456789abcdef0123456789abcdef"

// stalledOut is a stdout whose reader stops reading once the service is up:
// it keeps what it was given until then, and every later Write blocks until
// the test ends.
type stalledOut struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	stalled bool
	release chan struct{}
}

func (o *stalledOut) Write(p []byte) (int, error) {
	o.mu.Lock()
	stalled := o.stalled
	if !stalled {
		o.buf.Write(p)
		o.stalled = strings.Contains(o.buf.String(), "listening on")
	}
	o.mu.Unlock()
	if stalled {
		<-o.release
	}
	return len(p), nil
}

func (o *stalledOut) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// startRun runs run() with args on a loopback port, writing to out, and
// returns the base URL once the banner says it, and the channel run's
// result arrives on.
func startRun(t *testing.T, ctx context.Context, out interface {
	io.Writer
	String() string
}, args ...string) (string, chan error) {
	t.Helper()
	done := make(chan error, 1)
	args = append([]string{"--listen", "127.0.0.1:0", "--rate-limit", "0", "--admin-token", testAdminToken}, args...)
	go func() { done <- run(ctx, args, func(string) string { return "" }, out) }()
	listening := regexp.MustCompile(`listening on (http://\S+)`)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := listening.FindStringSubmatch(out.String()); m != nil {
			return m[1], done
		}
		select {
		case err := <-done:
			t.Fatalf("run returned before listening: %v\n%s", err, out)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("no 'listening on' line in:\n%s", out)
	return "", nil
}

// waitRun fails the test unless run returns within limit.
func waitRun(t *testing.T, done chan error, limit time.Duration) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(limit):
		t.Fatalf("run did not return within %s of the end of its context", limit)
	}
}

// TestLogReaderThatStopsDoesNotBlockRequests: with stdout on a reader that
// stopped reading, requests (far more than fill any log buffer) are still
// answered, the dropped lines are counted in /metrics, and shutdown ends.
func TestLogReaderThatStopsDoesNotBlockRequests(t *testing.T) {
	out := &stalledOut{release: make(chan struct{})}
	defer close(out.release)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, done := startRun(t, ctx, out, "--data", filepath.Join(t.TempDir(), "p.db"))

	client := &http.Client{Timeout: 5 * time.Second}
	get := func(path string, header ...string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		return res.StatusCode, string(body), err
	}
	// About 300 bytes of log a request: 8000 of them are over 2 MB, twice
	// what the log holds in memory.
	const requests, workers = 8000, 8
	longID := strings.Repeat("r", 100)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < requests; i += workers {
				status, _, err := get("/healthz", "X-Request-Id", longID)
				if err == nil && status != http.StatusOK {
					err = fmt.Errorf("status %d", status)
				}
				if err != nil {
					errs <- fmt.Errorf("request %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	status, body, err := get("/metrics", "Authorization", "Bearer "+testAdminToken)
	if err != nil || status != http.StatusOK {
		t.Fatalf("/metrics: %d %v", status, err)
	}
	m := regexp.MustCompile(`(?m)^petstore_log_lines_dropped_total (\d+)$`).FindStringSubmatch(body)
	if m == nil || m[1] == "0" {
		t.Errorf("petstore_log_lines_dropped_total: want > 0, got %v", m)
	}
	cancel()
	waitRun(t, done, 10*time.Second)
}

// TestShutdownAbortsASlowBackup: a backup download whose client stopped
// reading does not keep the service from shutting down: run returns soon
// after --shutdown-timeout, and the data file is closed (it opens again).
func TestShutdownAbortsASlowBackup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	// Tens of MB: far more than the socket buffers between server and
	// client hold, so the copy is still running when shutdown comes.
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat := &store.Category{Name: "bulk"}
	if err := db.CreateCategory(context.Background(), cat); err != nil {
		t.Fatal(err)
	}
	if err := db.ImportPets(context.Background(), cat.ID, 100_000, store.StatusAvailable); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, done := startRun(t, ctx, out, "--data", path, "--shutdown-timeout", "1s")

	dialer := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := dialer.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /admin/backup HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\n\r\n", testAdminToken)
	res, err := http.ReadResponse(bufio.NewReaderSize(conn, 4096), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.ContentLength < 8<<20 {
		t.Fatalf("backup: status %d, %d bytes; want 200 and over 8 MiB", res.StatusCode, res.ContentLength)
	}
	// The client reads nothing more.

	cancel()
	waitRun(t, done, 1*time.Second+5*time.Second)
	if !strings.Contains(out.String(), "aborting backups in flight") {
		t.Errorf("the log does not say that the backup was aborted:\n%s", out)
	}
	db, err = store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("the data file did not close: %v", err)
	}
	db.Close()
}
