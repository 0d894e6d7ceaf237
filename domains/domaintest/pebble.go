package domaintest

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// PebbleOptions tunes StartPebble. The zero value is what most tests want.
type PebbleOptions struct {
	// HTTPPort and TLSPort are where on 127.0.0.1 pebble validates HTTP-01
	// and TLS-ALPN-01; zero picks free ports.
	HTTPPort, TLSPort int
	// Env adds pebble's environment (KEY=value) after the defaults, so that
	// it can override them.
	Env []string
	// Profiles adds certificate profiles (name to validity in seconds).
	Profiles map[string]int
	// DNSServer, when set, is the resolver pebble validates through
	// (host:port, UDP); the DNS argument may then be nil.
	DNSServer string
}

// Pebble is a running pebble ACME CA on loopback, resolving names only
// through a test DNS (test names need A records for 127.0.0.1 there),
// validating at once with retry-after 0. It does not check CAA; its root
// changes on every start.
type Pebble struct {
	// HTTPPort and TLSPort are where pebble validates; the service under
	// test listens there.
	HTTPPort, TLSPort int

	listen, mgmt string // host:port of the ACME and management servers
	rootsPEM     []byte
	roots        *x509.CertPool
	proc         *Process
}

// StartPebble starts pebble resolving through dns, waits for its directory,
// and stops it with tb's test. Give each pebble fresh certificate storage:
// accounts do not carry over.
func StartPebble(tb testing.TB, dns *DNS, opts PebbleOptions) *Pebble {
	tb.Helper()
	dnsServer := opts.DNSServer
	if dnsServer == "" && dns != nil {
		dnsServer = dns.Addr()
	}
	if dnsServer == "" {
		tb.Fatalf("domaintest: StartPebble needs a DNS: pebble must not resolve test names through the system's resolver")
	}
	bin := toolBinary(tb, pebblePkg)
	dir, err := pebbleDir()
	if err != nil {
		tb.Fatalf("domaintest: %v", err)
	}
	rootsPEM, err := os.ReadFile(filepath.Join(dir, "test", "certs", "pebble.minica.pem"))
	if err != nil {
		tb.Fatalf("domaintest: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(rootsPEM) {
		tb.Fatalf("domaintest: no certificate in pebble.minica.pem")
	}
	cfgFile := filepath.Join(tb.TempDir(), "pebble-config.json")
	env := append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0", "PEBBLE_AUTHZREUSE=0")
	env = append(env, opts.Env...)

	p := &Pebble{rootsPEM: rootsPEM, roots: roots}
	p.proc = startServer(tb, "pebble", 20*time.Second, func() (*exec.Cmd, func() error) {
		p.HTTPPort, p.TLSPort = cmp.Or(opts.HTTPPort, freePort(tb)), opts.TLSPort
		for p.TLSPort == 0 || p.TLSPort == p.HTTPPort && opts.TLSPort == 0 {
			p.TLSPort = freePort(tb) // the first is not held: it may come again
		}
		p.listen = net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(tb)))
		p.mgmt = net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(tb)))
		if err := p.writeConfig(cfgFile, dir, opts.Profiles); err != nil {
			tb.Fatalf("domaintest: %v", err)
		}
		cmd := exec.Command(bin, "-config", cfgFile, "-dnsserver", dnsServer)
		cmd.Env = env
		return cmd, p.ready
	})
	return p
}

func (p *Pebble) writeConfig(file, pebbleDir string, extraProfiles map[string]int) error {
	profile := func(description string, seconds int) map[string]any {
		return map[string]any{"description": description, "validityPeriod": seconds}
	}
	// Clients should ask for "default", or pebble may pick the six-day one.
	profiles := map[string]any{
		"default":    profile("The profile you know and love", 7776000),
		"shortlived": profile("A short-lived cert profile, without actual enforcement", 518400),
	}
	for name, seconds := range extraProfiles {
		profiles[name] = profile(name, seconds)
	}
	certs := filepath.Join(pebbleDir, "test", "certs", "localhost")
	// Strings, numbers and maps of them, which always encode.
	b, _ := json.MarshalIndent(map[string]any{"pebble": map[string]any{
		"listenAddress":           p.listen,
		"managementListenAddress": p.mgmt,
		"certificate":             filepath.Join(certs, "cert.pem"),
		"privateKey":              filepath.Join(certs, "key.pem"),
		"httpPort":                p.HTTPPort,
		"tlsPort":                 p.TLSPort,
		"ocspResponderURL":        "",
		"keyAlgorithm":            "ecdsa",
		// The stock values make each issuance take seconds.
		"retryAfter": map[string]int{"authz": 0, "order": 0},
		"profiles":   profiles,
	}}, "", "  ")
	return os.WriteFile(file, b, 0o600)
}

func (p *Pebble) ready() error {
	client := p.HTTPClient()
	client.Timeout = 2 * time.Second
	for _, url := range []string{p.DirectoryURL(), p.ManagementURL() + "/roots/0"} {
		if err := getOK(client, url); err != nil {
			return err
		}
	}
	// Pebble exits when it cannot listen: then the servers that answered were
	// someone else's.
	time.Sleep(50 * time.Millisecond)
	return nil
}

func getOK(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// DirectoryURL is the ACME directory, for certmagic's ACMEIssuer.CA.
func (p *Pebble) DirectoryURL() string { return "https://" + p.listen + "/dir" }

// ManagementURL is pebble's management API (TLS trusted via RootsPEM).
func (p *Pebble) ManagementURL() string { return "https://" + p.mgmt }

// RootsPEM is the CA of pebble's own TLS certificate, which an ACME client
// must trust; not the root of what pebble issues (IssuerRootPEM).
func (p *Pebble) RootsPEM() []byte { return append([]byte(nil), p.rootsPEM...) }

// RootsPool is RootsPEM as a pool, for certmagic's ACMEIssuer.TrustedRoots.
func (p *Pebble) RootsPool() *x509.CertPool { return p.roots.Clone() }

// HTTPClient trusts pebble's TLS certificate. Pebble refuses requests
// without a User-Agent; Go's client sends its own.
func (p *Pebble) HTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: p.RootsPool()}
	return &http.Client{Transport: t, Timeout: 10 * time.Second}
}

// IssuerRootPEM fetches the root of the certificates this pebble issues.
func (p *Pebble) IssuerRootPEM(tb testing.TB) []byte {
	tb.Helper()
	resp, err := p.HTTPClient().Get(p.ManagementURL() + "/roots/0")
	if err != nil {
		tb.Fatalf("domaintest: fetching pebble's issuer root: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("domaintest: fetching pebble's issuer root: %s %v", resp.Status, err)
	}
	if block, _ := pem.Decode(body); block == nil || block.Type != "CERTIFICATE" {
		tb.Fatalf("domaintest: pebble's /roots/0 is not a PEM certificate: %.200s", body)
	}
	return body
}

// Log returns what pebble printed so far, to show which names were asked.
func (p *Pebble) Log() string { return p.proc.Out.String() }
