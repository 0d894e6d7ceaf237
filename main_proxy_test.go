package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
)

// proxiedGet sends path on a new connection from 127.0.0.1 to addr, after
// a PROXY v1 header naming client when client is not empty, and returns
// the status (0: closed without an answer) and body.
func proxiedGet(t *testing.T, addr, client, path string, header ...string) (int, string) {
	t.Helper()
	return proxiedGetFrom(t, "127.0.0.1", addr, client, path, header...)
}

// proxiedGetFrom is proxiedGet on a connection from the address local.
func proxiedGetFrom(t *testing.T, local, addr, client, path string, header ...string) (int, string) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, port, _ := net.SplitHostPort(addr)
	req := "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + strings.Join(header, "") + "\r\n"
	if client != "" {
		req = fmt.Sprintf("PROXY TCP4 %s 127.0.0.1 40000 %s\r\n", client, port) + req
	}
	return domaintest.Exchange(c, req)
}

// TestRunReadsTheProxyProtocol: with --proxy-protocol-from naming the
// load balancer (here 127.0.0.1), the client a PROXY header carries is the
// one the access log names and the rate limit counts; a connection from
// the balancer without a header is closed unanswered.
func TestRunReadsTheProxyProtocol(t *testing.T) {
	in := start(t, nil, "--data", filepath.Join(t.TempDir(), "p.db"), "--admin-token", domaintest.AdminToken,
		"--proxy-protocol-from", "127.0.0.1", "--rate-limit", "0.5")
	addr := strings.Replace(strings.TrimPrefix(in.base, "http://"), "localhost", "127.0.0.1", 1)

	if status, body := proxiedGet(t, addr, "198.51.100.7", "/pets"); status != http.StatusOK {
		t.Fatalf("first request of 198.51.100.7: %d %s", status, body)
	}
	domaintest.WaitFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if !strings.Contains(in.out.String(), "remote=198.51.100.7") {
			return fmt.Errorf("no access log line with remote=198.51.100.7 in:\n%s", in.out)
		}
		return nil
	})
	status, body := proxiedGet(t, addr, "198.51.100.7", "/pets")
	var e struct {
		Code   string
		Status int
	}
	if status != http.StatusTooManyRequests || json.Unmarshal([]byte(body), &e) != nil || e.Code != "rate_limited" || e.Status != status {
		t.Errorf("second request of 198.51.100.7 at 0.5/s: %d %s, want 429 rate_limited", status, body)
	}
	if status, body := proxiedGet(t, addr, "198.51.100.8", "/pets"); status != http.StatusOK {
		t.Errorf("another client behind the same balancer: %d %s, want 200 (its own limit)", status, body)
	}
	if status, body := proxiedGet(t, addr, "", "/pets"); status != 0 {
		t.Errorf("balancer's connection without a header: %d %s, want it closed unanswered", status, body)
	}
	if status, body := proxiedGetFrom(t, "127.0.0.2", addr, "198.51.100.11", "/pets"); status != http.StatusBadRequest {
		t.Errorf("PROXY line from an untrusted source: %d %s, want 400 (a malformed request)", status, body)
	}
}

// TestRunCountsFailedCredentialsPerCarriedClient: the limit of failed
// credentials counts the client a PROXY header carries, so one client's
// wrong tokens do not lock out another behind the same balancer.
func TestRunCountsFailedCredentialsPerCarriedClient(t *testing.T) {
	in := start(t, nil, "--data", filepath.Join(t.TempDir(), "p.db"), "--admin-token", domaintest.AdminToken,
		"--proxy-protocol-from", "127.0.0.0/8")
	addr := strings.Replace(strings.TrimPrefix(in.base, "http://"), "localhost", "127.0.0.1", 1)
	wrongToken := "Authorization: Bearer " + strings.Repeat("x", 40) + "\r\n"
	var last int
	for range 11 {
		last, _ = proxiedGet(t, addr, "198.51.100.9", "/admin/project", wrongToken)
	}
	if last != http.StatusTooManyRequests {
		t.Errorf("11th wrong token from 198.51.100.9: %d, want 429", last)
	}
	if status, body := proxiedGet(t, addr, "198.51.100.10", "/admin/project", wrongToken); status != http.StatusUnauthorized {
		t.Errorf("a wrong token from another client behind the balancer: %d %s, want 401", status, body)
	}
}

func TestConfigProxyProtocolFrom(t *testing.T) {
	c, err := parseConfig([]string{"--proxy-protocol-from", "10.0.0.5, 10.1.0.0/16"}, func(k string) string {
		return map[string]string{"PETSTORE_PROXY_PROTOCOL_FROM": "192.0.2.1"}[k]
	}, io.Discard)
	if err != nil || strings.Join(c.proxyProtocolFrom, " ") != "10.0.0.5 10.1.0.0/16" {
		t.Errorf("flag: %v %v", c.proxyProtocolFrom, err)
	}
	c, err = parseConfig(nil, func(k string) string {
		return map[string]string{"PETSTORE_PROXY_PROTOCOL_FROM": "192.0.2.1,192.0.2.2"}[k]
	}, io.Discard)
	if err != nil || strings.Join(c.proxyProtocolFrom, " ") != "192.0.2.1 192.0.2.2" {
		t.Errorf("environment: %v %v", c.proxyProtocolFrom, err)
	}
	if _, err := parseConfig([]string{"--proxy-protocol-from", "lb.example.com"}, func(string) string { return "" }, io.Discard); err == nil {
		t.Error("a host name as --proxy-protocol-from: no error")
	}
}
