package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/domains/domaintest"
)

// TestRunServesCustomDomainsOverHTTPS wires the TLS flags end to end: a
// domain added and verified through the admin API gets a certificate from
// a real ACME CA, is served over HTTPS by the --https-listen listener, and
// after a restart of the service the same certificate is served without a
// new issuance.
func TestRunServesCustomDomainsOverHTTPS(t *testing.T) {
	dns, pebble, rootFile := startACME(t)
	dir := t.TempDir()
	tlsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(pebble.TLSPort))
	args := append([]string{
		"--data", filepath.Join(dir, "petstore.db"),
		// No --http-listen: TLS-ALPN-01 is then the only challenge, so this
		// test proves it (the handlers tests obtain through HTTP-01).
		"--https-listen", tlsAddr,
	}, customDomainFlags(pebble, rootFile)...)
	env := map[string]string{"PETSTORE_DNS_RESOLVER": dns.Addr(), "PETSTORE_DNS_ALLOW_PRIVATE": "true"}

	first := start(t, env, args...)
	if code, body := first.call(t, "PATCH", "/admin/project", `{"plan":"pro"}`, adminAuth...); code != 200 || !strings.Contains(body, `"defaultAddress":"petstore.petstore.test"`) {
		t.Fatalf("PATCH project: %d %s", code, body)
	}
	if code, body := first.call(t, "POST", "/admin/domains", `{"name":"api.shop.test"}`, adminAuth...); code != 201 || !strings.Contains(body, `"host":"api"`) {
		t.Fatalf("add: %d %s", code, body)
	}
	dns.SetCNAME(t, "api.shop.test", "cname.petstore.test")
	if code, body := first.call(t, "POST", "/admin/domains/api.shop.test/verify", "", adminAuth...); code != 200 || !strings.Contains(body, `"state":"verified"`) {
		t.Fatalf("verify: %d %s", code, body)
	}
	domaintest.WaitFor(t, 15*time.Second, 100*time.Millisecond, func() error {
		if _, body := first.call(t, "GET", "/admin/domains/api.shop.test", "", adminAuth...); !strings.Contains(body, `"state":"issued"`) {
			return fmt.Errorf("no certificate: %s", body)
		}
		return nil
	})
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pebble.IssuerRootPEM(t))
	serial := func() string {
		t.Helper()
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", tlsAddr,
			&tls.Config{ServerName: "api.shop.test", RootCAs: roots})
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		defer conn.Close()
		if _, err := conn.Write([]byte("GET /pets HTTP/1.1\r\nHost: api.shop.test\r\nConnection: close\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		n, _ := conn.Read(buf)
		if !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
			t.Fatalf("HTTPS GET /pets: %q", buf[:n])
		}
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := serial()
	// Issued with no HTTP listener and no HTTP validation attempted: the
	// challenge was TLS-ALPN-01, answered inside the TLS handshake (DNS-01
	// is not configured). Pebble does not name the type it validates.
	if log := pebble.Log(); strings.Contains(log, "validate w/ HTTP") {
		t.Errorf("pebble tried HTTP-01:\n%s", log)
	}
	first.stop(t)
	issuances := strings.Count(pebble.Log(), "Issued certificate")

	second := start(t, env, args...)
	if after := serial(); after != before {
		t.Errorf("after restart the service serves certificate %s, want %s", after, before)
	}
	if n := strings.Count(pebble.Log(), "Issued certificate"); n != issuances {
		t.Errorf("the restart issued %d more certificates", n-issuances)
	}
	second.stop(t)
}

// TestRunFallsBackToTheNextCA: --acme-ca given twice (here through its
// environment twin, comma-separated), the first unreachable: the
// certificate comes from the second, and the domain answer names it.
func TestRunFallsBackToTheNextCA(t *testing.T) {
	dns, pebble, rootFile := startACME(t)
	dir := t.TempDir()
	const unreachable = "https://127.0.0.1:1/dir"
	env := map[string]string{
		"PETSTORE_DNS_RESOLVER":   dns.Addr(),
		"PETSTORE_ACME_CA":        unreachable + "," + pebble.DirectoryURL(),
		"PETSTORE_RENEW_INTERVAL": "1m",
	}
	in := start(t, env, "--data", filepath.Join(dir, "petstore.db"), "--admin-token", domaintest.AdminToken,
		"--domain", "petstore.test", "--https-listen", net.JoinHostPort("127.0.0.1", strconv.Itoa(pebble.TLSPort)),
		"--acme-ca-root", rootFile, "--acme-profile", "default", "--acme-caa-identity", "pebble.test",
		"--allow-test-tlds", "--dns-allow-private")
	defer in.stop(t)
	in.call(t, "PATCH", "/admin/project", `{"plan":"pro"}`, adminAuth...)
	dns.SetCNAME(t, "api.shop.test", "cname.petstore.test")
	if code, body := in.call(t, "POST", "/admin/domains", `{"name":"api.shop.test"}`, adminAuth...); code != 201 {
		t.Fatalf("add: %d %s", code, body)
	}
	if code, body := in.call(t, "POST", "/admin/domains/api.shop.test/verify", "", adminAuth...); code != 200 {
		t.Fatalf("verify: %d %s", code, body)
	}
	var body string
	domaintest.WaitFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if _, body = in.call(t, "GET", "/admin/domains/api.shop.test", "", adminAuth...); !strings.Contains(body, `"state":"issued"`) {
			return fmt.Errorf("no certificate: %s", body)
		}
		return nil
	})
	if !strings.Contains(body, `"issuerCA":"`+pebble.DirectoryURL()+`"`) {
		t.Errorf("the details do not name the CA that issued: %s", body)
	}
}

// adminAuth is the header the admin API wants, as call's header arguments.
var adminAuth = []string{"Authorization", "Bearer " + domaintest.AdminToken}

// customDomainFlags are the flags every custom-domain test gives the
// service: the admin token, the service's own domain, and pebble as the CA
// (with the CAA identity pebble announces) for names under the test TLD.
func customDomainFlags(pebble *domaintest.Pebble, rootFile string) []string {
	return []string{
		"--admin-token", domaintest.AdminToken, "--domain", "petstore.test",
		"--acme-ca", pebble.DirectoryURL(), "--acme-ca-root", rootFile, "--acme-profile", "default",
		"--acme-caa-identity", "pebble.test", "--allow-test-tlds",
	}
}

// startACME starts challtestsrv and a Pebble that validates through it,
// points the CNAME target at 127.0.0.1 (where Pebble validates), and writes
// Pebble's roots to a file for --acme-ca-root.
func startACME(t *testing.T) (dns *domaintest.DNS, pebble *domaintest.Pebble, rootFile string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts pebble and challtestsrv")
	}
	dns = domaintest.StartDNS(t)
	pebble = domaintest.StartPebble(t, dns, domaintest.PebbleOptions{})
	dns.AddA(t, domaintest.CNAMETarget, "127.0.0.1")
	rootFile = filepath.Join(t.TempDir(), "pebble-roots.pem")
	if err := os.WriteFile(rootFile, pebble.RootsPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	return dns, pebble, rootFile
}
