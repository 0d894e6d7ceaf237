package handlers

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"petstore/server/clientkey"
)

// TestInFlightCaps: a client past its own cap is refused while others are
// served, the total cap holds across clients, and released slots are
// taken again.
func TestInFlightCaps(t *testing.T) {
	f := newInFlight(5, 2)
	a, b, c := clientkey.Of("192.0.2.1:1"), clientkey.Of("192.0.2.2:1"), clientkey.Of("[2001:db8::1]:1")
	for range 2 {
		if why := f.take(a); why != "" {
			t.Fatalf("client a within its cap: %s", why)
		}
	}
	if why := f.take(a); why != "this client is at its limit of requests in flight" {
		t.Fatalf("client a past its cap: %q", why)
	}
	for _, k := range []clientkey.Key{b, b, c} {
		if why := f.take(k); why != "" {
			t.Fatalf("another client: %s", why)
		}
	}
	if why := f.take(clientkey.Of("192.0.2.9:1")); why != "the server is at its limit of requests in flight" {
		t.Fatalf("past the total: %q", why)
	}
	f.release(a)
	if why := f.take(a); why != "" {
		t.Fatalf("after a release: %s", why)
	}
	if len(f.counts) != 3 {
		t.Errorf("%d clients counted, want 3", len(f.counts))
	}
	for _, k := range []clientkey.Key{a, a, b, b, c} {
		f.release(k)
	}
	if f.total != 0 || len(f.counts) != 0 {
		t.Errorf("all released: total %d, %d clients left", f.total, len(f.counts))
	}
}

// unwrapper is a middleware's ResponseWriter that hides the connection's
// methods but unwraps, as http.ResponseController expects.
type unwrapper struct{ http.ResponseWriter }

func (u unwrapper) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// TestWriteDeadlineReachesTheConnection: setWriteDeadline finds net/http's
// connection, directly and through a writer that unwraps, so that a client
// that stops reading gives its slot back; a deadline already past fails
// the write of a body larger than the socket buffers.
func TestWriteDeadlineReachesTheConnection(t *testing.T) {
	for name, wrap := range map[string]func(http.ResponseWriter) http.ResponseWriter{
		"net/http's writer": func(w http.ResponseWriter) http.ResponseWriter { return w },
		"a wrapper":         func(w http.ResponseWriter) http.ResponseWriter { return unwrapper{w} },
	} {
		t.Run(name, func(t *testing.T) {
			wrote := make(chan error, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w = wrap(w)
				setWriteDeadline(w, time.Now().Add(-time.Second))
				_, err := w.Write(make([]byte, 64<<20))
				if err == nil {
					err = http.NewResponseController(w).Flush()
				}
				wrote <- err
			}))
			defer srv.Close()
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// Asks, then never reads the answer.
			if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-wrote:
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("write to a client that does not read, past the deadline: %v, want a deadline error", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the write still blocks: the deadline did not reach the connection")
			}
		})
	}
}

// TestCappedAnswersGetTheWriteDeadline: behind the in-flight cap, an
// answer larger than net/http's buffers, sent to a client that does not
// read it, fails at the write deadline (here already past) and frees its
// slot; a small answer, which never waits for its client inside the
// handler, gets no deadline of its own and arrives whole though the
// deadline would be past.
func TestCappedAnswersGetTheWriteDeadline(t *testing.T) {
	f := newInFlight(10, 10)
	f.writeTimeout = -time.Second
	wrote := make(chan error, 1)
	e := echo.New()
	e.GET("/large", func(c echo.Context) error {
		c.Response().WriteHeader(http.StatusOK)
		_, err := c.Response().Write(make([]byte, 64<<20))
		if err == nil {
			err = http.NewResponseController(c.Response()).Flush()
		}
		wrote <- err
		return nil
	}, f.limit)
	e.GET("/small", func(c echo.Context) error {
		return c.Blob(http.StatusOK, "text/plain", []byte(strings.Repeat("x", quietBytes)))
	}, f.limit)
	e.GET("/flushed", func(c echo.Context) error {
		c.Response().WriteHeader(http.StatusOK)
		wrote <- http.NewResponseController(c.Response().Writer).Flush()
		return nil
	}, f.limit)
	srv := httptest.NewServer(e)
	defer srv.Close()

	res, err := http.Get(srv.URL + "/small")
	if err != nil {
		t.Fatalf("a small capped answer: %v", err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || len(body) != quietBytes {
		t.Fatalf("a small capped answer: %d bytes, %v; want %d", len(body), err, quietBytes)
	}

	for _, path := range []string{"/large", "/flushed"} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		// Asks, then never reads the answer.
		if _, err := conn.Write([]byte("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-wrote:
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("%s: a write past the deadline: %v, want a deadline error", path, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the write still blocks: no deadline was set", path)
		}
		conn.Close()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.total != 0 {
		t.Errorf("%d slots still taken", f.total)
	}
}

// TestCappedHandlerKeepsItsOwnDeadline: a capped handler that sets its own
// write deadline (the event stream does, before each event) keeps it: the
// flush that follows does not put the cap's, here already past, in its
// place.
func TestCappedHandlerKeepsItsOwnDeadline(t *testing.T) {
	f := newInFlight(10, 10)
	f.writeTimeout = -time.Second
	e := echo.New()
	e.GET("/stream", func(c echo.Context) error {
		rc := http.NewResponseController(c.Response().Writer)
		if err := rc.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
			return err
		}
		c.Response().WriteHeader(http.StatusOK)
		if _, err := c.Response().Write([]byte("data: one\n\n")); err != nil {
			return err
		}
		if err := rc.Flush(); err != nil {
			return err
		}
		_, err := c.Response().Write([]byte("data: two\n\n"))
		return err
	}, f.limit)
	srv := httptest.NewServer(e)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || string(body) != "data: one\n\ndata: two\n\n" {
		t.Fatalf("a stream with its own deadline: %q, %v; want both events", body, err)
	}
}
