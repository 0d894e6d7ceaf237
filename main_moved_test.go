package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/domains/domaintest"
)

// TestRunKeepsMovedDomainCertificate: a domain whose DNS points elsewhere
// on 3 Re-verify checks over an hour (the domains clock is set, not
// waited for) is moved, keeps serving its certificate, still does after a
// restart of run() with no new issuance, and is verified again when its
// DNS comes back.
func TestRunKeepsMovedDomainCertificate(t *testing.T) {
	var mu sync.Mutex
	now := time.Now().UTC()
	domainsNow = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	t.Cleanup(func() { domainsNow = time.Now })
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }

	const name = "shop.moving.test"
	// Pebble validates through challtestsrv; the service's checker asks a
	// DNS server whose answers the test changes.
	challtestsrv, pebble, rootFile := startACME(t)
	challtestsrv.SetCNAME(t, name, "cname.petstore.test")
	resolver := domaintest.StartFaultyDNS(t)
	resolver.SetCNAME(t, name, "cname.petstore.test")

	dir := t.TempDir()
	tlsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(pebble.TLSPort))
	args := append([]string{
		"--data", filepath.Join(dir, "petstore.db"), "--https-listen", tlsAddr, "--dns-allow-private",
	}, customDomainFlags(pebble, rootFile)...)
	env := map[string]string{"PETSTORE_DNS_RESOLVER": resolver.Addr()}
	var domain struct {
		State       string `json:"state"`
		MovedAt     string `json:"movedAt"`
		Certificate struct {
			State string `json:"state"`
		} `json:"certificate"`
	}
	reverify := func(in *instance) {
		t.Helper()
		code, body := in.call(t, "POST", "/admin/domains/"+name+"/verify", "", adminAuth...)
		domain.MovedAt = ""
		if err := json.Unmarshal([]byte(body), &domain); code != 200 || err != nil {
			t.Fatalf("verify: %d %s", code, body)
		}
	}

	first := start(t, env, args...)
	if code, body := first.call(t, "PATCH", "/admin/project", `{"plan":"pro"}`, adminAuth...); code != 200 {
		t.Fatalf("PATCH project: %d %s", code, body)
	}
	if code, body := first.call(t, "POST", "/admin/domains", `{"name":"`+name+`"}`, adminAuth...); code != 201 {
		t.Fatalf("add: %d %s", code, body)
	}
	reverify(first)
	domaintest.WaitFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		_, body := first.call(t, "GET", "/admin/domains/"+name, "", adminAuth...)
		if err := json.Unmarshal([]byte(body), &domain); err != nil || domain.Certificate.State != "issued" {
			return fmt.Errorf("no certificate: %s", body)
		}
		return nil
	})
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pebble.IssuerRootPEM(t))
	serial := func(step string) string {
		t.Helper()
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", tlsAddr,
			&tls.Config{ServerName: name, RootCAs: roots})
		if err != nil {
			t.Fatalf("%s: handshake: %v", step, err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	issued := serial("verified")

	// The DNS points elsewhere: checked at 0, 30 and 60 minutes.
	resolver.SetCNAME(t, name, "old-host.example.net")
	for i, want := range []string{"verified", "verified", "moved"} {
		if i > 0 {
			advance(30 * time.Minute)
		}
		reverify(first)
		if domain.State != want {
			t.Fatalf("check %d pointing elsewhere: state %s, want %s", i+1, domain.State, want)
		}
	}
	if domain.MovedAt == "" || domain.Certificate.State != "issued" {
		t.Fatalf("moved: %+v", domain)
	}
	if s := serial("moved"); s != issued {
		t.Errorf("moved: serves certificate %s, want %s", s, issued)
	}
	first.stop(t)
	issuances := strings.Count(pebble.Log(), "Issued certificate")

	second := start(t, env, args...)
	if s := serial("moved, after a restart"); s != issued {
		t.Errorf("moved, after a restart: serves certificate %s, want %s", s, issued)
	}
	resolver.SetCNAME(t, name, "cname.petstore.test")
	advance(30 * time.Minute)
	reverify(second)
	if domain.State != "verified" || domain.MovedAt != "" {
		t.Fatalf("DNS back: %+v", domain)
	}
	if s := serial("verified again"); s != issued {
		t.Errorf("verified again: serves certificate %s, want %s", s, issued)
	}
	if n := strings.Count(pebble.Log(), "Issued certificate"); n != issuances {
		t.Errorf("%d more certificates issued after the move", n-issuances)
	}
	second.stop(t)
}
