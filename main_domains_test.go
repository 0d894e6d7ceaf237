package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	stdlog "log"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"petstore/domains/certs"
	"petstore/domains/domaintest"
	"petstore/events/webhooktest"
	"petstore/store"
)

// TestRunServesCustomDomainsOverHTTPS wires the TLS flags end to end: a
// domain added and verified through the admin API gets a certificate from
// a real ACME CA, is served over HTTPS by the --https-listen listener, and
// after a restart of the service the same certificate is served without a
// new issuance.
func TestRunServesCustomDomainsOverHTTPS(t *testing.T) {
	parallel(t)
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
	parallel(t)
	// A name of its own: certmagic keeps the challenges it is solving in
	// one map per process, by name, and the parallel tests share a process.
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
	dns.SetCNAME(t, "api.fallback.test", "cname.petstore.test")
	if code, body := in.call(t, "POST", "/admin/domains", `{"name":"api.fallback.test"}`, adminAuth...); code != 201 {
		t.Fatalf("add: %d %s", code, body)
	}
	if code, body := in.call(t, "POST", "/admin/domains/api.fallback.test/verify", "", adminAuth...); code != 200 {
		t.Fatalf("verify: %d %s", code, body)
	}
	var body string
	domaintest.WaitFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if _, body = in.call(t, "GET", "/admin/domains/api.fallback.test", "", adminAuth...); !strings.Contains(body, `"state":"issued"`) {
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

// TestNothingReachesStderr runs the service as a process of its own and
// has it obtain a certificate from a real ACME CA, with its challenges,
// then stops it: everything it logged, certmagic's lines included, went
// through the service's log on stdout, and its stderr stayed empty.
func TestNothingReachesStderr(t *testing.T) {
	if isChild() {
		runChild(func() error { return nil })
	}
	dns, pebble, rootFile := startACME(t)
	tlsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(pebble.TLSPort))
	args := append([]string{
		"--listen", "127.0.0.1:0", "--rate-limit", "0",
		"--data", filepath.Join(t.TempDir(), "petstore.db"),
		"--https-listen", tlsAddr,
		"--dns-resolver", dns.Addr(), "--dns-allow-private",
	}, customDomainFlags(pebble, rootFile)...)
	cmd := childCommand(t, args)
	var stdout, stderr domaintest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	var in *instance
	domaintest.WaitFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(stdout.String())
		if m == nil {
			return fmt.Errorf("no 'listening on' line in:\n%s", stdout.String())
		}
		in = &instance{base: m[1], out: &stdout}
		return nil
	})
	if code, body := in.call(t, "PATCH", "/admin/project", `{"plan":"pro"}`, adminAuth...); code != 200 {
		t.Fatalf("PATCH project: %d %s", code, body)
	}
	if code, body := in.call(t, "POST", "/admin/domains", `{"name":"api.shop.test"}`, adminAuth...); code != 201 {
		t.Fatalf("add: %d %s", code, body)
	}
	dns.SetCNAME(t, "api.shop.test", "cname.petstore.test")
	if code, body := in.call(t, "POST", "/admin/domains/api.shop.test/verify", "", adminAuth...); code != 200 {
		t.Fatalf("verify: %d %s", code, body)
	}
	domaintest.WaitFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if _, body := in.call(t, "GET", "/admin/domains/api.shop.test", "", adminAuth...); !strings.Contains(body, `"state":"issued"`) {
			return fmt.Errorf("no certificate: %s", body)
		}
		return nil
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err
		if err != nil {
			t.Errorf("the service exited with %v:\n%s", err, stdout.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the service did not stop after SIGTERM:\n%s", stdout.String())
	}
	if s := stderr.String(); s != "" {
		t.Errorf("the service wrote to stderr:\n%s", s)
	}
}

// TestStandardLogReachesTheServiceLog: lines that libraries write through
// the standard log package (certmagic's challenge servers and worker
// panics do) land in the service's log while it runs.
func TestStandardLogReachesTheServiceLog(t *testing.T) {
	in := start(t, nil, "--data", filepath.Join(t.TempDir(), "petstore.db"))
	stdlog.Printf("[ERROR] a line of a library through the standard log")
	waitFor(t, "the line in the service's log", 5*time.Second, func() bool {
		return strings.Contains(in.out.String(), "a line of a library through the standard log")
	})
}

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

// certEvent is one delivery a certificate receiver got.
type certEvent struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"createdAt"`
	Data      struct {
		Name        string            `json:"name"`
		Certificate store.Certificate `json:"certificate"`
	} `json:"data"`
}

// certEvents are the certificate events rcv accepted, each once, in the
// order of their ids, and their types.
func certEvents(t *testing.T, rcv *webhooktest.Receiver) (types []string, events []certEvent) {
	for _, e := range rcv.Events() {
		ce := certEvent{ID: e.ID, Type: e.Type, CreatedAt: e.CreatedAt}
		if err := json.Unmarshal(e.Data, &ce.Data); err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
		events = append(events, ce)
	}
	slices.SortFunc(events, func(a, b certEvent) int { return strings.Compare(a.ID, b.ID) })
	for _, e := range events {
		types = append(types, e.Type)
	}
	return types, events
}

// TestCertificateFailsThenExpiresDeliveredOnce: a short-lived certificate
// from pebble is issued; the service restarts while the CA can no longer
// validate the name (its DNS answers SERVFAIL), so every renewal fails.
// With no request to the service, a webhook subscribed to the certificate
// events gets certificate.issued, then certificate.failed, then
// certificate.expiring (once, when a sixth of the lifetime is left) and
// certificate.expired (once, after notAfter), each event exactly once, at
// the right times, every signature verified.
func TestCertificateFailsThenExpiresDeliveredOnce(t *testing.T) {
	longParallel(t)
	if testing.Short() {
		t.Skip("starts pebble and challtestsrv, waits for a certificate to expire")
	}
	const lifetime = 40 // seconds
	dns := domaintest.StartDNS(t)
	pebble := domaintest.StartPebble(t, dns, domaintest.PebbleOptions{Profiles: map[string]int{"short": lifetime}})
	dns.AddA(t, domaintest.CNAMETarget, "127.0.0.1")
	rootFile := filepath.Join(t.TempDir(), "pebble-roots.pem")
	if err := os.WriteFile(rootFile, pebble.RootsPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	// Lenient: what it refuses is listed at the end.
	rcv := webhooktest.Start(t, webhooktest.Options{Lenient: true})

	data := filepath.Join(t.TempDir(), "petstore.db")
	args := func(renew string) []string {
		return []string{
			"--data", data, "--https-listen", net.JoinHostPort("127.0.0.1", strconv.Itoa(pebble.TLSPort)),
			"--admin-token", domaintest.AdminToken, "--domain", domaintest.PlatformDomain,
			"--acme-ca", pebble.DirectoryURL(), "--acme-ca-root", rootFile, "--acme-profile", "short",
			"--acme-caa-identity", "pebble.test", "--allow-test-tlds", "--webhook-allow-private",
			"--renew-interval", renew,
		}
	}
	env := map[string]string{"PETSTORE_DNS_RESOLVER": dns.Addr(), "PETSTORE_DNS_ALLOW_PRIVATE": "true"}
	// The first run is not meant to renew: the certificate is issued, and
	// the CA is cut off once its event is delivered. certmagic may still
	// renew before that, when the CA's renewal window (ARI) comes first on
	// a slow machine; the certificate that expires is then the renewed one.
	first := start(t, env, args("1h")...)
	first.call(t, "PATCH", "/admin/project", `{"plan":"pro"}`, adminAuth...)
	var hook struct {
		ID     int64  `json:"id"`
		Secret string `json:"secret"`
	}
	types := []string{store.EventCertIssued, store.EventCertRenewed, store.EventCertFailed, store.EventCertExpiring, store.EventCertExpired}
	subscribe, _ := json.Marshal(map[string]any{"url": rcv.URL, "events": types})
	code, body := first.call(t, "POST", "/admin/webhooks", string(subscribe), adminAuth...)
	if code != 201 || json.Unmarshal([]byte(body), &hook) != nil {
		t.Fatalf("creating the webhook: %d %s", code, body)
	}
	rcv.Trust(hook.Secret)

	const name = "www.expiring.test"
	dns.SetCNAME(t, name, domaintest.CNAMETarget)
	if code, body := first.call(t, "POST", "/admin/domains", `{"name":"`+name+`"}`, adminAuth...); code != 201 {
		t.Fatalf("add: %d %s", code, body)
	}
	if code, body := first.call(t, "POST", "/admin/domains/"+name+"/verify", "", adminAuth...); code != 200 || !strings.Contains(body, `"state":"verified"`) {
		t.Fatalf("verify: %d %s", code, body)
	}
	var issued certEvent
	domaintest.WaitFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		got, events := certEvents(t, rcv)
		if len(got) == 0 {
			return fmt.Errorf("no certificate.issued delivered")
		}
		issued = events[0]
		return nil
	})
	cert := issued.Data.Certificate
	if issued.Type != store.EventCertIssued || issued.Data.Name != name || cert.State != store.CertIssued || cert.NotAfter == nil || cert.NotBefore == nil {
		t.Fatalf("the first delivery: %+v", issued)
	}
	notAfter, expiringAt := *cert.NotAfter, *certs.ExpiringAt(cert)
	// The receiver has the event before the service records its success:
	// stopped in between, it would rightly send it again after its lease.
	// It stops once no delivery is left pending.
	domaintest.WaitFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		code, body := first.call(t, "GET", fmt.Sprintf("/admin/webhooks/%d/deliveries", hook.ID), "", adminAuth...)
		var deliveries []struct {
			EventType, State string
		}
		if err := json.Unmarshal([]byte(body), &deliveries); code != 200 || err != nil {
			return fmt.Errorf("the webhook's deliveries: %d %s", code, body)
		}
		if len(deliveries) == 0 || slices.ContainsFunc(deliveries, func(d struct{ EventType, State string }) bool { return d.State == "pending" }) {
			return fmt.Errorf("deliveries not all recorded: %+v", deliveries)
		}
		return nil
	})
	// The CA can no longer validate the name; the service's own checks
	// see only failed lookups, which never move a verified domain.
	dns.SetServfail(t, name)
	first.stop(t)

	second := start(t, env, args("1s")...)
	defer second.stop(t)
	domaintest.WaitFor(t, time.Until(notAfter)+(lifetime+30)*time.Second, 100*time.Millisecond, func() error {
		if got, _ := certEvents(t, rcv); !slices.Contains(got, store.EventCertExpired) {
			return fmt.Errorf("delivered so far: %v", got)
		}
		return nil
	})
	got, events := certEvents(t, rcv)
	for _, e := range events {
		if e.Type == store.EventCertRenewed && e.Data.Certificate.NotAfter != nil {
			cert = e.Data.Certificate
			notAfter, expiringAt = *cert.NotAfter, *certs.ExpiringAt(cert)
		}
	}
	t.Logf("delivered %v; notAfter %v", got, notAfter)
	var failed, expiring, expired int
	for i, e := range events {
		switch e.Type {
		case store.EventCertFailed:
			failed++
			if expiring+expired > 0 || !e.CreatedAt.Before(notAfter) {
				t.Errorf("certificate.failed at %v, after the expiry events (notAfter %v): %v", e.CreatedAt, notAfter, got)
			}
		case store.EventCertExpiring:
			expiring++
			if e.CreatedAt.Before(expiringAt) || !e.CreatedAt.Before(notAfter) || e.Data.Certificate.ExpiringNotedAt == nil || e.Data.Certificate.Serial != cert.Serial {
				t.Errorf("certificate.expiring at %v, want from %v to notAfter %v: %+v", e.CreatedAt, expiringAt, notAfter, e)
			}
		case store.EventCertExpired:
			expired++
			if e.CreatedAt.Before(notAfter) || e.Data.Certificate.State != store.CertExpired || i != len(events)-1 {
				t.Errorf("certificate.expired at %v (notAfter %v), state %s, position %d of %v", e.CreatedAt, notAfter, e.Data.Certificate.State, i, got)
			}
		case store.EventCertIssued:
			if i != 0 {
				t.Errorf("a second certificate.issued: %v", got)
			}
		case store.EventCertRenewed:
			if failed+expiring+expired > 0 {
				t.Errorf("certificate.renewed after the CA was cut off: %v", got)
			}
		default:
			t.Errorf("unexpected %s: %v", e.Type, got)
		}
		if e.Data.Name != name {
			t.Errorf("%s names %q", e.Type, e.Data.Name)
		}
	}
	if failed == 0 || expiring != 1 || expired != 1 {
		t.Errorf("delivered %v: want certificate.issued, certificate.failed (at least once), one certificate.expiring, one certificate.expired", got)
	}
	times := map[string]int{} // webhook-id -> deliveries
	for _, d := range rcv.Deliveries() {
		times[d.ID]++
	}
	for id, n := range times {
		if n != 1 {
			t.Errorf("event %s delivered %d times", id, n)
		}
	}
	if bad := rcv.Rejected(); len(bad) > 0 {
		t.Errorf("deliveries refused (bad signature or envelope): %q", bad)
	}
}

// TestRunAnswersTheACMEZone: with --acme-dns-zone, run answers the zone's
// SOA over UDP and TCP on --dns-listen, and refuses other names;
// --dns-listen alone is refused, naming the flag it needs.
func TestRunAnswersTheACMEZone(t *testing.T) {
	in := start(t, nil, "--data", t.TempDir()+"/p.db", "--acme-dns-zone", "acme.plat.test", "--dns-listen", "127.0.0.1:0", "--acme-dns-ns", "ns1.plat.test")
	m := regexp.MustCompile(`answering DNS for the ACME zone.* udp=(\S+) tcp=(\S+)`).FindStringSubmatch(in.out.String())
	if m == nil {
		t.Fatalf("no DNS server in the log:\n%s", in.out)
	}
	for network, addr := range map[string]string{"udp": m[1], "tcp": m[2]} {
		c := &dns.Client{Net: network, Timeout: 2 * time.Second}
		q := new(dns.Msg)
		q.SetQuestion("acme.plat.test.", dns.TypeSOA)
		r, _, err := c.Exchange(q, addr)
		if err != nil || !r.Authoritative || len(r.Answer) != 1 || r.Answer[0].(*dns.SOA).Ns != "ns1.plat.test." {
			t.Errorf("SOA over %s: %v %v", network, r, err)
		}
		q.SetQuestion("plat.test.", dns.TypeSOA)
		if r, _, err := c.Exchange(q, addr); err != nil || r.Rcode != dns.RcodeRefused {
			t.Errorf("the parent zone over %s: %v %v", network, r, err)
		}
	}

	err := run(t.Context(), []string{"--listen", "127.0.0.1:0", "--data", t.TempDir() + "/q.db", "--dns-listen", "127.0.0.1:0"}, func(string) string { return "" }, &discard{})
	if err == nil || !regexp.MustCompile(`--dns-listen needs --acme-dns-zone`).MatchString(err.Error()) {
		t.Errorf("--dns-listen without a zone: %v", err)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
