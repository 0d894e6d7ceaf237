package handlers_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"petstore/handlers"
)

// TestBodyErrorsAreNotCredentialErrors sends bodies that cannot be read
// whole (chunked past the limit, cut short, with broken chunk framing, too
// slow), each with a valid credential, over TCP to the server as main.go
// configures it. Such a body is judged as a body: 413, 400 or 408, never
// 401, which would send the client looking for a key that is fine.
func TestBodyErrorsAreNotCredentialErrors(t *testing.T) {
	ts := newTestServer(t)
	ts.do("POST", "/categories", `{"name":"dogs"}`).wantStatus(201)
	addr := productionServer(t, ts)
	// A server whose read timeout is short enough to wait for: its only
	// client sends half a body and stops.
	slow := httptest.NewUnstartedServer(ts.srv)
	slow.Config = handlers.NewHTTPServer(ts.srv, nil, nil)
	slow.Config.ReadTimeout = time.Second
	slow.Start()
	t.Cleanup(slow.Close)

	pet := `{"name":"Rex","categoryId":1}`
	big := `{"name":"` + strings.Repeat("x", 70<<10) + `","categoryId":1}`
	chunked := func(chunks ...string) string {
		var b strings.Builder
		for _, c := range chunks {
			fmt.Fprintf(&b, "%x\r\n%s\r\n", len(c), c)
		}
		return b.String() + "0\r\n\r\n"
	}
	apiKey := "X-API-Key: " + ts.apiKey
	admin := "Authorization: Bearer " + ts.admin
	for _, tc := range []struct {
		name, addr, method, path, credential string
		framing                              string // Content-Length or Transfer-Encoding header
		body                                 string
		// cut: the client stops sending after the body and closes its
		// write side (true), or keeps the connection open (false).
		cut  bool
		want int
	}{
		{"chunked, within the limit", addr, "POST", "/pets", apiKey, "Transfer-Encoding: chunked", chunked(pet[:10], pet[10:]), false, 201},
		{"chunked, past the limit", addr, "POST", "/pets", apiKey, "Transfer-Encoding: chunked", chunked(big[:40<<10], big[40<<10:]), false, 413},
		{"declared past the limit", addr, "POST", "/pets", apiKey, fmt.Sprintf("Content-Length: %d", len(big)), big, false, 413},
		{"admin, chunked past the limit", addr, "POST", "/admin/api-keys", admin, "Transfer-Encoding: chunked", chunked(big), false, 413},
		{"malformed chunk size", addr, "POST", "/pets", apiKey, "Transfer-Encoding: chunked", "zz\r\n" + pet + "\r\n0\r\n\r\n", false, 400},
		{"chunk longer than sent", addr, "POST", "/pets", apiKey, "Transfer-Encoding: chunked", "100\r\n" + pet, true, 400},
		{"shorter than its Content-Length", addr, "PUT", "/categories/1", apiKey, "Content-Length: 100", `{"name":"cats"}`, true, 400},
		{"admin, shorter than its Content-Length", addr, "PATCH", "/admin/project", admin, "Content-Length: 100", `{"plan":"pro"}`, true, 400},
		{"too slow", slow.Listener.Addr().String(), "POST", "/pets", apiKey, "Content-Length: 100", pet, false, 408},
		{"no body taken, chunked past the limit", addr, "DELETE", "/pets/999", apiKey, "Transfer-Encoding: chunked", chunked(big[:40<<10], big[40<<10:]), false, 400},
		{"wrong key, readable body", addr, "POST", "/pets", "X-API-Key: psk_wrong", fmt.Sprintf("Content-Length: %d", len(pet)), pet, false, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n%s\r\n%s\r\n\r\n", tc.method, tc.path, tc.credential, tc.framing)
			res, got := sendBody(t, tc.addr, head, tc.body, tc.cut)
			if res.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.want, got)
			}
			if res.StatusCode >= 400 && tc.want != http.StatusUnauthorized && !res.Close {
				t.Errorf("a body that could not be used leaves the connection open")
			}
			req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(head)))
			if err != nil {
				t.Fatal(err)
			}
			req.Body = http.NoBody
			ts.with(t).validate(req, nil, &response{tb: t, status: res.StatusCode, header: res.Header, body: got})
		})
	}
}

// sendBody writes a request's head and body to addr, closes its write side
// when cut is set, and reads the one answer.
func sendBody(t *testing.T, addr, head, body string, cut bool) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	go func() {
		// The server may answer (413) before it has read everything.
		_, _ = io.WriteString(conn, head+body)
		if cut {
			_ = conn.(*net.TCPConn).CloseWrite()
		}
	}()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	got, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading the answer's body: %v", err)
	}
	return res, bytes.TrimSpace(got)
}
