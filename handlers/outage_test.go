package handlers_test

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"petstore/domains/domaintest"
	"petstore/handlers"
	"petstore/handlers/listen"
)

// h2Server serves ts over TLS with HTTP/2, configured as main.go does.
func h2Server(t *testing.T, ts *testServer) string {
	t.Helper()
	s := httptest.NewUnstartedServer(ts.srv)
	s.Config = listen.NewHTTPServer(ts.srv, nil, nil)
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	return s.Listener.Addr().String()
}

// h2Conn is a raw HTTP/2 client connection from a chosen loopback address.
type h2Conn struct {
	mu   sync.Mutex
	fr   *http2.Framer
	conn net.Conn
	enc  *hpack.Encoder
	buf  bytes.Buffer
	// answered receives the id of every stream the server sent headers on.
	answered chan uint32
}

// dialH2 opens an HTTP/2 connection from local to addr whose receive window
// is zero: the server may send headers, never a byte of a body.
func dialH2(t *testing.T, local, addr string, window uint32) *h2Conn {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	c := &h2Conn{fr: http2.NewFramer(conn, conn), conn: conn, answered: make(chan uint32, 1000)}
	c.enc = hpack.NewEncoder(&c.buf)
	c.mu.Lock()
	_ = c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: window})
	c.mu.Unlock()
	go func() { // read and acknowledge what the server sends; give no window
		for {
			f, err := c.fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					c.mu.Lock()
					_ = c.fr.WriteSettingsAck()
					c.mu.Unlock()
				}
			case *http2.HeadersFrame:
				select {
				case c.answered <- f.StreamID:
				default:
				}
			}
		}
	}()
	return c
}

// open starts stream id with a request of method on path, with or without
// a body to follow.
func (c *h2Conn) open(t *testing.T, id uint32, method, path string, endStream bool) {
	t.Helper()
	c.openWith(t, id, method, path, "psk_none", nil, endStream)
}

// openWith starts stream id with a request carrying apiKey and, when body is
// not nil, that body.
func (c *h2Conn) openWith(t *testing.T, id uint32, method, path, apiKey string, body []byte, endStream bool) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Reset()
	for _, f := range [][2]string{{":method", method}, {":path", path}, {":scheme", "https"}, {":authority", "localhost"},
		{"content-type", "application/json"}, {"x-api-key", apiKey}} {
		_ = c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.buf.Bytes(), EndStream: endStream && body == nil, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	if body != nil {
		if err := c.fr.WriteData(id, endStream, body); err != nil {
			t.Fatal(err)
		}
	}
}

func (c *h2Conn) reset(id uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
}

// slowBody starts a POST /pets from local whose body arrives a byte a
// second, and returns when its headers are sent.
func slowBody(t *testing.T, local, addr string, stop <-chan struct{}) {
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Errorf("slow client %s: %v", local, err)
		return
	}
	_, _ = io.WriteString(conn, "POST /pets HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
	go func() {
		defer conn.Close()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
}

// TestSlowClientsCannotTakeEverySlot: four addresses send request bodies a
// byte a second, 100 requests each (their rate limit's burst), and a fifth
// holds HTTP/2 streams whose flow-control window stays shut, on a server
// that serves 32 requests at once, 8 per client. Throughout, another
// client's GET /pets, the probes and the dashboard are answered.
func TestSlowClientsCannotTakeEverySlot(t *testing.T) {
	ts := newTestServer(t, func(c *handlers.Config) {
		c.MaxInFlight, c.MaxClientInFlight, c.RateLimit = 32, 8, handlers.DefaultRateLimit
	})
	plain := productionServer(t, ts)
	tlsAddr := h2Server(t, ts)
	stop := make(chan struct{})
	defer close(stop)
	for i := range 4 {
		for range 100 {
			slowBody(t, fmt.Sprintf("127.0.0.%d", 2+i), plain, stop)
		}
	}
	h2 := dialH2(t, "127.0.0.6", tlsAddr, 0)
	for i := range 90 { // within the connection's 100 streams
		h2.open(t, uint32(2*i+1), "GET", "/", true)
	}
	other := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true,
	}}
	for round := range 3 {
		for _, target := range []string{"http://" + plain + "/pets", "http://" + plain + "/healthz", "https://" + tlsAddr + "/pets", "https://" + tlsAddr + "/dashboard/"} {
			res, err := other.Get(target)
			if err != nil {
				t.Fatalf("round %d, another client's GET %s: %v", round, target, err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("round %d, another client's GET %s: %d %s", round, target, res.StatusCode, body)
			}
		}
		time.Sleep(time.Second) // the slow bodies go on
	}
}

// TestResetStreamsAreNotErrors: 1,000 HTTP/2 streams reset by their client,
// half of them writes reset right after their body (the store sees a
// canceled request), half of them reads reset while their answer waits on
// a shut window, give no 500 in the metrics and no error in the log.
func TestResetStreamsAreNotErrors(t *testing.T) {
	var logs domaintest.SyncBuffer
	ts := newTestServer(t, func(c *handlers.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.MaxClientInFlight = -1
	})
	ts.do(http.MethodPost, "/categories", `{"name":"dogs"}`).wantStatus(http.StatusCreated)
	addr := h2Server(t, ts)
	for range 10 {
		c := dialH2(t, "127.0.0.1", addr, 0)
		for i := range 50 {
			id := uint32(4*i + 1)
			c.openWith(t, id, "POST", "/pets", ts.apiKey, []byte(`{"name":"Rex","categoryId":1}`), true)
			c.reset(id)
			c.open(t, id+2, "GET", "/", true)
			select { // the handler runs, its answer blocked by the window
			case <-c.answered:
			case <-time.After(30 * time.Second):
				t.Fatal("no answer's headers within 30 s")
			}
			c.reset(id + 2)
		}
	}
	domaintest.WaitFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		m := ts.adminDo(http.MethodGet, "/metrics", "").wantStatus(http.StatusOK)
		if n := requestsCounted(string(m.body), `route="/"`, `method="GET"`); n < 500 {
			return fmt.Errorf("%d of the 500 reset reads counted", n)
		}
		return nil
	})
	m := ts.adminDo(http.MethodGet, "/metrics", "").wantStatus(http.StatusOK)
	if strings.Contains(string(m.body), `status="500"`) {
		t.Errorf("a 500 in the metrics:\n%s", m.body)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("errors in the log:\n%s", logs.String())
	}
	t.Logf("writes counted: %d, of which abandoned (499): %d", requestsCounted(string(m.body), `route="/pets"`, `method="POST"`),
		requestsCounted(string(m.body), `route="/pets"`, `method="POST"`, `status="499"`))
}

// requestsCounted sums the petstore_http_requests_total series whose labels
// include every one of labels.
func requestsCounted(metrics string, labels ...string) int {
	n := 0
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, "petstore_http_requests_total{") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		var v int
		if i := strings.LastIndexByte(line, ' '); ok && i > 0 {
			if _, err := fmt.Sscan(line[i+1:], &v); err == nil {
				n += v
			}
		}
	}
	return n
}
