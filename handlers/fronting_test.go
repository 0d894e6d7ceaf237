package handlers_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"petstore/domains/domaintest"
	"petstore/store"
)

// TestNoDomainFronting: over the TLS connection of one customer's domain,
// a request whose Host names another customer's gets 421, not the other
// site; case, a trailing dot and a port in the Host do not matter, and a
// ClientHello without SNI gets no certificate at all.
func TestNoDomainFronting(t *testing.T) {
	e := newDomainEnv(t)
	e.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)
	const a, b = "a.example.com", "b.example.com"
	for _, n := range []string{a, b} {
		e.adminDo("POST", "/admin/domains", `{"name":"`+n+`"}`).wantStatus(201)
		e.dns.SetCNAME(t, n, domaintest.CNAMETarget)
		e.verify(t, n)
		domaintest.WaitFor(t, 15*time.Second, 50*time.Millisecond, func() error {
			if got, err := e.db.Domain(context.Background(), n); err != nil || got.Certificate.State != store.CertIssued {
				return fmt.Errorf("%s: certificate %+v, %v", n, got.Certificate, err)
			}
			return nil
		})
	}
	for _, c := range []struct {
		sni, host string
		status    int
	}{
		{a, a, 200},
		{"A.Example.COM", "a.example.com.:443", 200},
		{a, b, 421},
		{a, "localhost", 421},
		{a, "127.0.0.1", 421},
	} {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", net.JoinHostPort("127.0.0.1", itoa(e.pebble.TLSPort)),
			&tls.Config{ServerName: c.sni, RootCAs: e.roots, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatalf("SNI %s: %v", c.sni, err)
		}
		fmt.Fprintf(conn, "GET /pets HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", c.host)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("SNI %s, Host %s: %v", c.sni, c.host, err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != c.status {
			t.Errorf("SNI %s, Host %s: %d, want %d", c.sni, c.host, resp.StatusCode, c.status)
		}
	}
	// Without SNI there is no name to answer for: no certificate.
	if conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", net.JoinHostPort("127.0.0.1", itoa(e.pebble.TLSPort)),
		&tls.Config{InsecureSkipVerify: true}); err == nil {
		conn.Close()
		t.Error("a ClientHello without SNI got a certificate")
	}
}
