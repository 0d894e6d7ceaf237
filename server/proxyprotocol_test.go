package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	proxyproto "github.com/pires/go-proxyproto"

	"petstore/domains/domaintest"
	"petstore/domains/domaintest/testcert"
)

// startProxyListeners serves, on a loopback port behind a ConnGuard capping
// each client at maxPerClient, a handler that answers with the request's
// RemoteAddr host, reading PROXY headers from trusted. It returns the
// address and the guard.
func startProxyListeners(t *testing.T, trusted []string, tc *tls.Config, maxPerClient int) (string, *ConnGuard) {
	t.Helper()
	guard, _, _ := NewConnGuard(maxPerClient)
	ls := NewListeners(guard)
	if err := ls.ReadProxyProtocolFrom(trusted); err != nil {
		t.Fatal(err)
	}
	echoRemote := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		_, _ = io.WriteString(w, host)
	})
	addr, err := ls.ListenAs("", "127.0.0.1:0", &http.Server{Handler: echoRemote, TLSConfig: tc, ReadHeaderTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ls.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-served
		ls.Shutdown(0, func() {}, slog.New(slog.DiscardHandler))
	})
	return addr.String(), guard
}

// proxyHeader is a PROXY header (version 1 or 2) naming client as the
// source of a connection to addr.
func proxyHeader(t *testing.T, version byte, client, addr string) []byte {
	t.Helper()
	dst, _ := net.ResolveTCPAddr("tcp", addr)
	h := proxyproto.HeaderProxyFromAddrs(version, &net.TCPAddr{IP: net.ParseIP(client), Port: 40000}, dst)
	b, err := h.Format()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// get sends a GET on c and returns the status and body; status 0 when the
// connection was closed without an answer.
func get(c net.Conn) (int, string) {
	return domaintest.Exchange(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
}

func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestProxyProtocolCarriedAddress(t *testing.T) {
	addr, _ := startProxyListeners(t, []string{"127.0.0.1/32"}, nil, 0)
	for _, version := range []byte{1, 2} {
		c := dialFrom(t, "127.0.0.1", addr)
		if _, err := c.Write(proxyHeader(t, version, "198.51.100.7", addr)); err != nil {
			t.Fatal(err)
		}
		if status, body := get(c); status != 200 || body != "198.51.100.7" {
			t.Errorf("PROXY v%d for 198.51.100.7: %d %q, want 200 and the carried address", version, status, body)
		}
	}
	t.Run("trusted source without a header is closed", func(t *testing.T) {
		if status, body := get(dialFrom(t, "127.0.0.1", addr)); status != 0 {
			t.Errorf("no header from a trusted source: answered %d %q, want the connection closed", status, body)
		}
	})
	t.Run("untrusted source is served as itself, header unread", func(t *testing.T) {
		if status, body := get(dialFrom(t, "127.0.0.2", addr)); status != 200 || body != "127.0.0.2" {
			t.Errorf("plain request from an untrusted source: %d %q, want 200 127.0.0.2", status, body)
		}
		c := dialFrom(t, "127.0.0.2", addr)
		if _, err := c.Write(proxyHeader(t, 1, "198.51.100.7", addr)); err != nil {
			t.Fatal(err)
		}
		if status, body := get(c); status != http.StatusBadRequest {
			t.Errorf("PROXY line from an untrusted source: %d %q, want 400 (not a request)", status, body)
		}
	})
}

// TestProxyProtocolCapPerCarriedAddress: the per-client connection cap
// counts the carried address, so two clients behind one balancer each get
// their own cap.
func TestProxyProtocolCapPerCarriedAddress(t *testing.T) {
	addr, _ := startProxyListeners(t, []string{"127.0.0.0/8"}, nil, 2)
	open := func(client string) (status int) {
		c := dialFrom(t, "127.0.0.1", addr)
		if _, err := c.Write(proxyHeader(t, 2, client, addr)); err != nil {
			t.Fatal(err)
		}
		status, _ = get(c) // the connection stays open, counted
		return status
	}
	for _, client := range []string{"198.51.100.7", "198.51.100.8"} {
		for i := range 2 {
			if status := open(client); status != 200 {
				t.Fatalf("%s, connection %d of a cap of 2: %d, want 200", client, i+1, status)
			}
		}
	}
	if status := open("198.51.100.7"); status != 0 {
		t.Errorf("198.51.100.7, third connection: %d, want it closed by the cap", status)
	}
}

// TestProxyProtocolSilentClientDoesNotBlockAccept: a trusted source that
// opens a connection and sends nothing does not keep other clients waiting
// for its header timeout.
func TestProxyProtocolSilentClientDoesNotBlockAccept(t *testing.T) {
	t.Parallel() // it waits for the header timeout
	addr, _ := startProxyListeners(t, []string{"127.0.0.1/32"}, nil, 0)
	silent := dialFrom(t, "127.0.0.1", addr)
	began := time.Now()
	c := dialFrom(t, "127.0.0.1", addr)
	if _, err := c.Write(proxyHeader(t, 1, "198.51.100.7", addr)); err != nil {
		t.Fatal(err)
	}
	if status, body := get(c); status != 200 || body != "198.51.100.7" {
		t.Fatalf("client after a silent one: %d %q", status, body)
	}
	if took := time.Since(began); took >= proxyHeaderTimeout/2 {
		t.Errorf("the client after a silent one was answered after %s, near the header timeout %s", took, proxyHeaderTimeout)
	}
	// The silent connection is closed once its header time is up.
	_ = silent.SetReadDeadline(time.Now().Add(2 * proxyHeaderTimeout))
	if _, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("silent connection: read %v, want it closed (EOF)", err)
	}
}

// TestProxyProtocolBeforeTLS: on a TLS listener the header comes before the
// handshake.
func TestProxyProtocolBeforeTLS(t *testing.T) {
	cert := selfSignedCert(t)
	addr, _ := startProxyListeners(t, []string{"127.0.0.1/32"}, &tls.Config{Certificates: []tls.Certificate{cert}}, 0)
	raw := dialFrom(t, "127.0.0.1", addr)
	if _, err := raw.Write(proxyHeader(t, 2, "198.51.100.7", addr)); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	c := tls.Client(raw, &tls.Config{ServerName: "localhost", RootCAs: pool})
	if status, body := get(c); status != 200 || body != "198.51.100.7" {
		t.Errorf("HTTPS after a PROXY v2 header: %d %q, want 200 and the carried address", status, body)
	}
}

func selfSignedCert(t *testing.T) tls.Certificate {
	t.Helper()
	cert, err := tls.X509KeyPair(testcert.SelfSigned(t, "localhost", 1))
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
