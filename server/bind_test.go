package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBindBeforeServe: a socket bound before its server exists (start-up
// binds every socket before it opens the store) takes connections at once,
// which wait in its backlog and are answered once ListenAs serves it; a
// second Bind of the name is the same socket; a socket systemd passed
// replaces the bind, and one passed for a name nobody bound is an error.
func TestBindBeforeServe(t *testing.T) {
	guard, _, err := NewConnGuard(0)
	if err != nil {
		t.Fatal(err)
	}
	l := NewListeners(guard)
	defer l.Close()
	passed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stray, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.Inherit(map[string]net.Listener{NameHTTP: passed, NameHTTPS: stray})
	addr, err := l.Bind(NameListen, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := l.Bind(NameListen, "127.0.0.1:0"); err != nil || again.String() != addr.String() {
		t.Fatalf("the second Bind: %v %v, want %v", again, err, addr)
	}
	httpAddr, err := l.Bind(NameHTTP, "192.0.2.1:80") // not an address of this machine
	if err != nil || httpAddr.String() != passed.Addr().String() {
		t.Fatalf("Bind of a passed socket: %v %v, want %v", httpAddr, err, passed.Addr())
	}
	if err := l.Unused(); err == nil || !strings.Contains(err.Error(), "[https]") {
		t.Errorf("Unused: %v, want the https socket named", err)
	}

	// A request sent before anything serves the socket.
	answered := make(chan string, 1)
	go func() {
		c := &http.Client{Timeout: 30 * time.Second}
		res, err := c.Get("http://" + addr.String() + "/")
		if err != nil {
			answered <- err.Error()
			return
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		answered <- string(body)
	}()
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
	for _, name := range []string{NameListen, NameHTTP} {
		got, err := l.ListenAs(name, "192.0.2.1:80", &http.Server{Handler: hello})
		if err != nil {
			t.Fatalf("ListenAs %s: %v", name, err)
		}
		if name == NameListen && got.String() != addr.String() {
			t.Errorf("ListenAs %s serves %v, not the socket bound at %v", name, got, addr)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Serve(ctx) }()
	if got := <-answered; got != "hello" {
		t.Errorf("the request sent before the socket was served got %q", got)
	}
}
