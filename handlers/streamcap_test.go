package handlers_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/handlers"
)

// clientAt is an HTTP client whose connections come from the loopback
// address ip: to the server, another client address.
func clientAt(ip string) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 30 * time.Second}
}

// streamFrom opens GET path as a stream from client c; it gives the
// response, its body closed when the test ends.
func streamFrom(t *testing.T, c *http.Client, url, admin string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept", "text/event-stream")
	if admin != "" {
		req.Header.Set("Authorization", "Bearer "+admin)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// refused checks a refused stream: its status, Retry-After and error code.
func refused(t *testing.T, what string, resp *http.Response, status int, code string) {
	t.Helper()
	var body struct{ Code, Message string }
	err := json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != status || body.Code != code || resp.Header.Get("Retry-After") == "" || err != nil {
		t.Errorf("%s: %d %q %q (Retry-After %q, %v), want %d %s with Retry-After", what, resp.StatusCode, body.Code, body.Message, resp.Header.Get("Retry-After"), err, status, code)
	}
}

// Four anonymous addresses cannot take every event stream: each has its
// cap (429 past it), the public streams together stop short of the total
// (503), and the operator's GET /admin/events is still answered 200 and
// streams. Every stream starts with a retry: line.
func TestEventStreamsKeepTheOperatorsShare(t *testing.T) {
	ts := newTestServer(t, withEvents(t), func(c *handlers.Config) { c.MaxStreams, c.MaxStreamsPerClient = 20, 5 })
	url := ts.http.URL
	opened := 0
	for i := range 4 {
		c := clientAt(fmt.Sprintf("127.0.0.%d", 11+i))
		for range 5 {
			resp := streamFrom(t, c, url+"/events", "")
			switch {
			case resp.StatusCode == 200:
				opened++
			case opened < 18:
				t.Fatalf("stream %d from address %d: %d before the public share (18) was full", opened+1, i, resp.StatusCode)
			default:
				refused(t, "a public stream past the public share", resp, 503, "unavailable")
			}
		}
		// A 6th from one address: its own cap.
		if i == 0 {
			refused(t, "a 6th stream from one address", streamFrom(t, c, url+"/events", ""), 429, "rate_limited")
		}
	}
	if opened != 18 {
		t.Fatalf("%d public streams opened, want 18 (20 less the operator's tenth)", opened)
	}
	refused(t, "a public stream from a fresh address", streamFrom(t, clientAt("127.0.0.20"), url+"/events", ""), 503, "unavailable")

	// The operator, from one of those addresses even, is served and
	// streams; the answer begins with retry:.
	resp := streamFrom(t, clientAt("127.0.0.11"), url+"/admin/events", ts.admin)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /admin/events with the public share full: %d", resp.StatusCode)
	}
	r := bufio.NewReader(resp.Body)
	first, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(first, "retry: ") {
		t.Errorf("the stream starts with %q (%v), want a retry: line", first, err)
	}
	ts.adminDo("POST", "/admin/api-keys", `{"name":"seen live"}`).wantStatus(201)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the admin stream ended before the event: %v", err)
		}
		if strings.HasPrefix(line, "data: ") && strings.Contains(line, "seen live") {
			break
		}
	}
}
