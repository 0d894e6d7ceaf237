package handlers_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"petstore/server"
)

// TestHeaderLimitIsTheServers: the service's 431 Error body answers at the
// limit the http.Server was given (server.MaxHeaderBytes as main.go
// configures it), not at a second copy of it: on a server given a lower
// one, a request just past it gets the Error body, before net/http's own
// plain-text 431 further on.
func TestHeaderLimitIsTheServers(t *testing.T) {
	ts := newTestServer(t)
	s := httptest.NewUnstartedServer(ts.srv)
	s.Config = server.NewHTTPServer(ts.srv, nil, nil, server.DefaultHeaderTimeout)
	s.Config.MaxHeaderBytes = server.MaxHeaderBytes / 4
	s.Start()
	t.Cleanup(s.Close)
	addr := s.Listener.Addr().String()

	for _, tc := range []struct {
		size   int
		status int
	}{
		{server.MaxHeaderBytes/4 - 1024, 200},
		{server.MaxHeaderBytes/4 + 1024, 431},
	} {
		raw := "GET /pets HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + strings.Repeat("v", tc.size) + "\r\n\r\n"
		res, body := rawExchange(t, addr, raw)
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			t.Fatal(err)
		}
		r := &response{tb: t, status: res.StatusCode, header: res.Header, body: body}
		ts.validate(req, nil, r)
		if res.StatusCode != tc.status {
			t.Fatalf("%d bytes of header: %d, want %d: %.200s", tc.size, res.StatusCode, tc.status, body)
		}
		if tc.status == 431 {
			r.wantError(431, "headers_too_large")
			if !strings.Contains(r.message(), fmt.Sprintf("%d KiB", server.MaxHeaderBytes/4>>10)) {
				t.Errorf("431 message %q does not name the server's limit", r.message())
			}
		}
	}
}
