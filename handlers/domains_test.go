package handlers_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/domains"
	"petstore/domains/certs"
	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
	"petstore/handlers"
	"petstore/store"
)

// domainEnv is a test server with the custom-domain machinery wired to a
// real DNS server (challtestsrv) and a real ACME CA (pebble), with the TLS
// and HTTP listeners where pebble validates challenges.
type domainEnv struct {
	*testServer
	dns     *domaintest.DNS
	pebble  *domaintest.Pebble
	manager *domains.Manager
	roots   *x509.CertPool // trusts what pebble issues
}

func newDomainEnv(t *testing.T) *domainEnv {
	t.Helper()
	dns := domaintest.StartDNS(t)
	pebble := domaintest.StartPebble(t, dns, domaintest.PebbleOptions{})
	// Pebble validates against 127.0.0.1: every test name resolves there
	// through the CNAME target.
	dns.AddA(t, domaintest.CNAMETarget, "127.0.0.1")
	env := &domainEnv{dns: dns, pebble: pebble}
	env.testServer = newTestServer(t, func(c *handlers.Config) {
		env.manager = domaintest.NewManager(t, domains.Config{
			Store:    c.Store.(store.Store),
			Platform: dnscheck.Platform{Domain: domaintest.PlatformDomain, CNAMETarget: domaintest.CNAMETarget},
			Checker: &dnscheck.Checker{
				Resolvers:     []string{dns.Addr()},
				CAAIdentities: []string{domaintest.CAAIdentity}, Timeout: time.Second,
				AllowPrivateNameservers: true,
			},
			AllowTestTLDs: true,
			ACME: &domains.ACME{
				CA: pebble.DirectoryURL(), TrustedRoots: pebble.RootsPool(), Profile: "default",
				HTTPPort: pebble.HTTPPort, TLSPort: pebble.TLSPort,
			},
		})
		c.Domains = env.manager
	})
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", itoa(pebble.TLSPort)))
	if err != nil {
		t.Fatal(err)
	}
	tlsServer := &http.Server{Handler: env.srv}
	go tlsServer.Serve(tls.NewListener(ln, env.manager.TLSConfig()))
	t.Cleanup(func() { tlsServer.Close() })
	hln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", itoa(pebble.HTTPPort)))
	if err != nil {
		t.Fatal(err)
	}
	httpServer := &http.Server{Handler: env.manager.HTTPChallengeHandler(env.srv.HTTPSRedirect())}
	go httpServer.Serve(hln)
	t.Cleanup(func() { httpServer.Close() })
	env.roots = x509.NewCertPool()
	env.roots.AppendCertsFromPEM(pebble.IssuerRootPEM(t))
	return env
}

func itoa(n int) string { return strconv.Itoa(n) }

type domainJSON struct {
	store.Domain
	Troubleshooting []string
}

func (e *domainEnv) verify(t *testing.T, name string) domainJSON {
	t.Helper()
	var d domainJSON
	e.with(t).adminDo("POST", "/admin/domains/"+name+"/verify", "").wantStatus(200).decode(&d)
	return d
}

// handshake opens a TLS connection to the service with this SNI, with a
// short deadline: a refused name must fail fast, not hang on issuance.
func (e *domainEnv) handshake(sni string) (*tls.Conn, time.Duration, error) {
	start := time.Now()
	d := &net.Dialer{Timeout: 2 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort("127.0.0.1", itoa(e.pebble.TLSPort)),
		&tls.Config{ServerName: sni, RootCAs: e.roots, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
	return conn, time.Since(start), err
}

// httpsGet sends a request over HTTPS to the service with this SNI and Host.
func (e *domainEnv) httpsGet(t *testing.T, host, path string) (*http.Response, error) {
	t.Helper()
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{ServerName: host, RootCAs: e.roots},
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", itoa(e.pebble.TLSPort)))
		},
	}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	return c.Get("https://" + host + path)
}

func findingCodes(d domainJSON) []string {
	var out []string
	if d.Check != nil {
		for _, f := range d.Check.Findings {
			out = append(out, f.Code)
		}
	}
	return out
}

// TestCustomDomainLifecycle follows a domain from add to remove against a
// real DNS server and a real ACME CA: the plan gate, each DNS finding, a
// certificate obtained without any client handshake, HTTPS with that SNI,
// no certificate for strangers, and removal that takes effect at once.
func TestCustomDomainLifecycle(t *testing.T) {
	e := newDomainEnv(t)
	ctx := context.Background()

	// The free plan cannot add domains.
	e.adminDo("POST", "/admin/domains", `{"name":"shop.example.com"}`).wantError(403, "plan_required")
	e.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)

	// Added, normalised, with the record to create.
	var d domainJSON
	res := e.adminDo("POST", "/admin/domains", `{"name":" Shop.Example.COM. "}`).wantStatus(201)
	res.decode(&d)
	if d.Name != "shop.example.com" || d.State != "pending" || d.Apex || res.header.Get("Location") != "/admin/domains/shop.example.com" {
		t.Fatalf("added domain %+v, Location %q", d.Domain, res.header.Get("Location"))
	}
	if len(d.Records) != 1 || d.Records[0].Type != "CNAME" || d.Records[0].Host != "shop" || d.Records[0].Value != domaintest.CNAMETarget || d.Records[0].TTL != 3600 {
		t.Fatalf("records to create: %+v", d.Records)
	}
	e.adminDo("POST", "/admin/domains", `{"name":"shop.example.com"}`).wantError(409, "domain_exists")
	var listed []domainJSON
	e.adminDo("GET", "/admin/domains", "").wantStatus(200).decode(&listed)
	if len(listed) != 1 || listed[0].Name != "shop.example.com" {
		t.Fatalf("listed domains: %+v", listed)
	}
	for _, bad := range []string{`{"name":"192.0.2.1"}`, `{"name":"https://x.example.com/"}`, `{"name":"co.uk"}`, `{"name":"app.petstore.test"}`} {
		e.adminDo("POST", "/admin/domains", bad).wantError(400, "invalid_request")
	}

	// DNS not set yet.
	if d = e.verify(t, "shop.example.com"); d.State != "pending" || strings.Join(findingCodes(d), ",") != "no_record" {
		t.Fatalf("no DNS: state %s, findings %v", d.State, findingCodes(d))
	}
	// An A record where the CNAME should be.
	e.dns.AddA(t, "shop.example.com", "192.0.2.10")
	if d = e.verify(t, "shop.example.com"); !strings.Contains(strings.Join(findingCodes(d), ","), "conflicting_record") {
		t.Fatalf("A record: findings %v", findingCodes(d))
	}
	e.dns.Clear(t, domaintest.A, "shop.example.com")
	// A CNAME to somewhere else: both values named.
	e.dns.SetCNAME(t, "shop.example.com", "elsewhere.example.net")
	d = e.verify(t, "shop.example.com")
	if codes := findingCodes(d); len(codes) != 1 || codes[0] != "cname_mismatch" ||
		!strings.Contains(d.Check.Findings[0].Message, "elsewhere.example.net") || !strings.Contains(d.Check.Findings[0].Message, domaintest.CNAMETarget) {
		t.Fatalf("CNAME mismatch: %+v", d.Check)
	}
	// The right CNAME, but CAA on the parent names another CA.
	e.dns.SetCNAME(t, "shop.example.com", domaintest.CNAMETarget)
	e.dns.AddCAA(t, "example.com", "issue", "other-ca.example")
	if d = e.verify(t, "shop.example.com"); strings.Join(findingCodes(d), ",") != "caa_blocks_ca" || d.State != "pending" {
		t.Fatalf("CAA: state %s, findings %v", d.State, findingCodes(d))
	}
	if _, _, err := e.handshake("shop.example.com"); err == nil {
		t.Fatal("a domain that does not verify got a certificate")
	}
	e.dns.Clear(t, domaintest.CAA, "example.com")

	// Verified: the certificate comes from pebble with no client handshake.
	if d = e.verify(t, "shop.example.com"); d.State != "verified" || len(findingCodes(d)) != 0 {
		t.Fatalf("verify: state %s, findings %v", d.State, findingCodes(d))
	}
	domaintest.WaitFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		if got, err := e.db.Domain(ctx, "shop.example.com"); err != nil || got.Certificate.State != store.CertIssued {
			return fmt.Errorf("certificate not issued: %+v, %v", got.Certificate, err)
		}
		return nil
	})
	got, _ := e.db.Domain(ctx, "shop.example.com")
	if got.Certificate.Issuer == "" || got.Certificate.NotAfter == nil || !got.Certificate.NotAfter.After(time.Now()) {
		t.Errorf("issued certificate state: %+v", got.Certificate)
	}
	// The answer carries the details, as the admin document describes them.
	e.adminDo("GET", "/admin/domains/shop.example.com", "").wantStatus(200).decode(&d)
	if c := d.Certificate; c.Serial == "" || len(c.Names) != 1 || c.RenewalDueAt == nil || c.IssuerCA != e.pebble.DirectoryURL() ||
		c.LastAttempt == nil || len(c.Events) != 1 || c.Events[0].Kind != store.CertEventObtained {
		t.Errorf("certificate details: %+v", c)
	}
	keys, _ := certs.Storage(e.db).List(ctx, "certificates", true)
	if !strings.Contains(strings.Join(keys, " "), "shop.example.com.crt") {
		t.Errorf("no certificate in storage: %v", keys)
	}
	conn, took, err := e.handshake("shop.example.com")
	if err != nil {
		t.Fatalf("handshake for a verified domain: %v", err)
	}
	serial := conn.ConnectionState().PeerCertificates[0].SerialNumber
	conn.Close()
	// Nothing below TLS 1.2.
	old, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", net.JoinHostPort("127.0.0.1", itoa(e.pebble.TLSPort)),
		&tls.Config{ServerName: "shop.example.com", RootCAs: e.roots, MaxVersion: tls.VersionTLS11})
	if err == nil {
		old.Close()
		t.Error("a TLS 1.1 handshake was accepted")
	}
	t.Logf("handshake with the issued certificate took %v", took)
	resp, err := e.httpsGet(t, "shop.example.com", "/pets")
	if err != nil {
		t.Fatalf("HTTPS with the customer's SNI: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("HTTPS GET /pets: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// The operator's side is not served on a customer's domain.
	if resp, err := e.httpsGet(t, "shop.example.com", "/admin/project"); err != nil || resp.StatusCode != 404 {
		t.Fatalf("admin through a customer domain: %v %v", resp, err)
	}

	// Strangers get no certificate, fast, and the CA is never asked.
	for _, name := range []string{"stranger.example.com", "pending.example.com"} {
		if name == "pending.example.com" {
			e.adminDo("POST", "/admin/domains", `{"name":"pending.example.com"}`).wantStatus(201)
		}
		_, took, err := e.handshake(name)
		if err == nil || took > time.Second {
			t.Errorf("handshake for %s: err %v after %v, want a failure within a second", name, err, took)
		}
		if strings.Contains(e.pebble.Log(), name) {
			t.Errorf("the CA was asked about %s", name)
		}
	}
	// Plain HTTP: the customer's domain is served, strangers get 421.
	e.send("GET", "/pets", "", http.Header{"Host": {"shop.example.com"}}).wantStatus(200)
	e.send("GET", "/pets", "", http.Header{"Host": {"stranger.example.com"}}).wantError(421, "unknown_host")
	e.beforeOperations().send("GET", "/admin/project", "", http.Header{"Host": {"shop.example.com"}, "Authorization": {"Bearer " + e.admin}}).wantError(404, "not_found")
	// The HTTP listener beside TLS sends served hosts to HTTPS.
	req, _ := http.NewRequest("GET", "http://127.0.0.1:"+itoa(e.pebble.HTTPPort)+"/pets?limit=1", nil)
	req.Host = "shop.example.com"
	if resp, err := noRedirects.Do(req); err != nil || resp.StatusCode != 308 || resp.Header.Get("Location") != "https://shop.example.com/pets?limit=1" {
		t.Fatalf("HTTP listener redirect: %v %v", resp, err)
	}

	// A restart keeps the certificate and the account: a new manager on
	// the same storage serves the same certificate and issues nothing.
	before := e.pebble.Log()
	m2, err := domains.NewManager(domains.Config{
		Store:         e.db,
		Platform:      dnscheck.Platform{Domain: domaintest.PlatformDomain, CNAMETarget: domaintest.CNAMETarget},
		Checker:       &dnscheck.Checker{Resolvers: []string{e.dns.Addr()}, AllowPrivateNameservers: true},
		AllowTestTLDs: true,
		ACME:          &domains.ACME{CA: e.pebble.DirectoryURL(), TrustedRoots: e.pebble.RootsPool(), Profile: "default", HTTPPort: e.pebble.HTTPPort, TLSPort: e.pebble.TLSPort},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	go m2.Run(runCtx)
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	srv2 := &http.Server{Handler: e.srv}
	go srv2.Serve(tls.NewListener(ln2, m2.TLSConfig()))
	conn2, err := tls.Dial("tcp", ln2.Addr().String(), &tls.Config{ServerName: "shop.example.com", RootCAs: e.roots})
	if err != nil {
		t.Fatalf("handshake after restart: %v", err)
	}
	if got := conn2.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(serial) != 0 {
		t.Errorf("after restart the certificate changed: serial %v, want %v", got, serial)
	}
	conn2.Close()
	srv2.Close()
	stopRun()
	m2.Close()
	if after := e.pebble.Log(); len(after) != len(before) && strings.Contains(after[len(before):], "shop.example.com") {
		t.Errorf("the restart asked the CA again: %s", after[len(before):])
	}

	// Remove: at once, no handshake, no HTTP, nothing in storage.
	e.adminDo("DELETE", "/admin/domains/shop.example.com", "").wantStatus(204)
	if _, took, err := e.handshake("shop.example.com"); err == nil || took > time.Second {
		t.Errorf("handshake after remove: err %v after %v", err, took)
	}
	e.send("GET", "/pets", "", http.Header{"Host": {"shop.example.com"}}).wantError(421, "unknown_host")
	keys, _ = certs.Storage(e.db).List(ctx, "certificates", true)
	if strings.Contains(strings.Join(keys, " "), "shop.example.com") {
		t.Errorf("the certificate is still in storage: %v", keys)
	}
	e.adminDo("GET", "/admin/domains/shop.example.com", "").wantError(404, "not_found")
	e.adminDo("DELETE", "/admin/domains/shop.example.com", "").wantError(404, "not_found")
}

// TestRedirects saves a chain flattened, refuses a loop, and answers GET
// and HEAD on a redirect source with the status and the same path and query.
func TestRedirects(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)
	for _, n := range []string{"a.example.com", "b.example.com", "c.example.com"} {
		ts.adminDo("POST", "/admin/domains", `{"name":"`+n+`"}`).wantStatus(201)
		// Verified without DNS: the routing rules are what is under test.
		if _, err := ts.db.UpdateDomain(ctx, n, func(d *store.Domain) error { d.State = store.DomainVerified; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	var s store.Settings
	ts.adminDo("PUT", "/admin/settings", `{"domains":{"primary":"c.example.com","redirects":[
		{"from":"a.example.com","to":"b.example.com"},
		{"from":"b.example.com","to":"c.example.com","status":308}]}}`).wantStatus(200).decode(&s)
	want := []store.Redirect{{From: "a.example.com", To: "c.example.com", Status: 301}, {From: "b.example.com", To: "c.example.com", Status: 308}}
	if len(s.Domains.Redirects) != 2 || s.Domains.Redirects[0] != want[0] || s.Domains.Redirects[1] != want[1] || s.Domains.Primary != "c.example.com" {
		t.Fatalf("saved settings %+v, want %+v", s, want)
	}
	ts.adminDo("GET", "/admin/settings", "").wantStatus(200)

	for _, bad := range []struct{ body, mentions string }{
		{`{"domains":{"redirects":[{"from":"a.example.com","to":"b.example.com"},{"from":"b.example.com","to":"a.example.com"}]}}`, "loop"},
		{`{"domains":{"redirects":[{"from":"a.example.com","to":"a.example.com"}]}}`, "itself"},
		{`{"domains":{"redirects":[{"from":"a.example.com","to":"b.example.com","status":303}]}}`, "status"},
		{`{"domains":{"redirects":[{"from":"z.example.com","to":"b.example.com"}]}}`, "z.example.com"},
		{`{"domains":{"primary":"a.example.com","redirects":[{"from":"a.example.com","to":"b.example.com"}]}}`, "primary"},
	} {
		if msg := ts.adminDo("PUT", "/admin/settings", bad.body).wantError(400, "invalid_request").message(); !strings.Contains(msg, bad.mentions) {
			t.Errorf("refusal %q does not mention %q", msg, bad.mentions)
		}
	}
	if got, _ := ts.db.Settings(ctx); len(got.Domains.Redirects) != 2 {
		t.Errorf("a refused PUT changed the settings: %+v", got)
	}

	for _, method := range []string{"GET", "HEAD"} {
		res := ts.send(method, "/pets/7?limit=3&x=%2F", "", http.Header{"Host": {"a.example.com"}})
		if res.status != 301 || res.header.Get("Location") != "https://c.example.com/pets/7?limit=3&x=%2F" || len(res.body) != 0 {
			t.Errorf("%s on a redirect source: %d Location %q body %q", method, res.status, res.header.Get("Location"), res.body)
		}
	}
	if res := ts.send("GET", "/", "", http.Header{"Host": {"b.example.com"}}); res.status != 308 || res.header.Get("Location") != "https://c.example.com/" {
		t.Errorf("b: %d %q", res.status, res.header.Get("Location"))
	}
	// The target itself is served; removing it drops the redirects to it.
	ts.send("GET", "/pets", "", http.Header{"Host": {"c.example.com"}}).wantStatus(200)
	ts.adminDo("DELETE", "/admin/domains/c.example.com", "").wantStatus(204)
	if got, _ := ts.db.Settings(ctx); len(got.Domains.Redirects) != 0 || got.Domains.Primary != "" {
		t.Errorf("settings still name a removed domain: %+v", got)
	}
	ts.send("GET", "/pets", "", http.Header{"Host": {"a.example.com"}}).wantStatus(200)
}

func TestAddDomainNeedsADeploy(t *testing.T) {
	db := domaintest.OpenStore(t)
	_, _ = db.UpdateProject(context.Background(), func(p *store.Project) error { p.Plan = store.PlanPro; return nil })
	m := domaintest.NewManager(t, domains.Config{Store: db, Checker: &dnscheck.Checker{}})
	_, err := m.Add(context.Background(), "shop.example.com", nil)
	var appErr *store.Error
	if !errors.As(err, &appErr) || appErr.Code != store.ECONFLICT || !strings.Contains(appErr.Message, "deploy") {
		t.Fatalf("adding without a deploy: %v", err)
	}
}

// TestDomainAnswersWhileDNSFlaps: the admin API's domain answers carry
// the warning finding of a failed lookup, the count of checks pointing
// elsewhere and the time of the move, as the admin spec describes them
// (every answer is validated against it).
func TestDomainAnswersWhileDNSFlaps(t *testing.T) {
	resolver := domaintest.StartFaultyDNS(t)
	var mu sync.Mutex
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ts := newTestServer(t, withDomains(t, domains.Config{
		Platform:      dnscheck.Platform{Domain: domaintest.PlatformDomain, CNAMETarget: domaintest.CNAMETarget},
		Checker:       &dnscheck.Checker{Resolvers: []string{resolver.Addr()}, Timeout: time.Second, AllowPrivateNameservers: true},
		Now:           clock,
		AllowTestTLDs: true,
	}))
	const name = "shop.flap.test"
	resolver.SetCNAME(t, name, domaintest.CNAMETarget)
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)
	ts.adminDo("POST", "/admin/domains", `{"name":"`+name+`"}`).wantStatus(201)
	verify := func() store.Domain {
		t.Helper()
		var d store.Domain
		ts.adminDo("POST", "/admin/domains/"+name+"/verify", "").wantStatus(200).decode(&d)
		return d
	}
	if d := verify(); d.State != store.DomainVerified {
		t.Fatalf("verify: %+v", d)
	}

	resolver.SetFault(domaintest.ServFail, 1)
	d := verify()
	if d.State != store.DomainVerified || d.Check == nil || len(d.Check.Findings) != 1 ||
		d.Check.Findings[0].Code != dnscheck.CodeDNSError {
		t.Fatalf("Re-verify during a SERVFAIL: %+v %+v", d, d.Check)
	}

	resolver.SetFault(domaintest.NoFault, 0)
	resolver.SetCNAME(t, name, "old-host.example.net")
	for i := range 3 {
		if i > 0 {
			mu.Lock()
			now = now.Add(30 * time.Minute)
			mu.Unlock()
		}
		d = verify()
	}
	if d.State != store.DomainMoved || d.MovedAt == nil || d.PointsElsewhereChecks != 3 || d.PointsElsewhereSince == nil {
		t.Fatalf("after 3 checks over an hour pointing elsewhere: %+v", d)
	}
	var listed []store.Domain
	ts.adminDo("GET", "/admin/domains", "").wantStatus(200).decode(&listed)
	if len(listed) != 1 || listed[0].State != store.DomainMoved {
		t.Fatalf("list: %+v", listed)
	}
}

// TestCAAWarningVerifies: without the CA's CAA identity (no
// --acme-caa-identity, no ACME directory to ask), CAA records naming a CA
// give a warning finding, valid against the admin spec, and the domain
// verifies.
func TestCAAWarningVerifies(t *testing.T) {
	dns := domaintest.StartDNS(t)
	ts := newTestServer(t, withDomains(t, domains.Config{
		Platform: dnscheck.Platform{Domain: domaintest.PlatformDomain, CNAMETarget: domaintest.CNAMETarget},
		Checker:  &dnscheck.Checker{Resolvers: []string{dns.Addr()}, Timeout: time.Second},
	}))
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)
	ts.adminDo("POST", "/admin/domains", `{"name":"shop.example.com"}`).wantStatus(201)
	dns.SetCNAME(t, "shop.example.com", domaintest.CNAMETarget)
	dns.AddCAA(t, "example.com", "issue", "other-ca.example")

	var d domainJSON
	ts.adminDo("POST", "/admin/domains/shop.example.com/verify", "").wantStatus(200).decode(&d)
	if d.State != "verified" || d.Check == nil || !d.Check.Verified || len(d.Check.Findings) != 1 {
		t.Fatalf("state %s check %+v", d.State, d.Check)
	}
	if f := d.Check.Findings[0]; f.Code != dnscheck.CodeCAAUnchecked || !f.Warning {
		t.Fatalf("finding %+v", f)
	}
}

// TestSettingsNeedVerifiedDomains: a redirect target and the primary domain
// must be verified domains or the default address, so that no visitor is
// sent (and no browser caches a 301) to a name without a certificate. The
// 400 names the field.
func TestSettingsNeedVerifiedDomains(t *testing.T) {
	ts := newTestServer(t)
	ts.verifiedDomain("live.example.com")
	ts.adminDo("POST", "/admin/domains", `{"name":"pending.example.com"}`).wantStatus(201)

	for _, bad := range []struct{ body, mentions string }{
		{`{"domains":{"redirects":[{"from":"live.example.com","to":"pending.example.com"}]}}`, "domains.redirects[0].to: pending.example.com is pending"},
		{`{"domains":{"primary":"pending.example.com"}}`, "domains.primary: pending.example.com is pending"},
	} {
		if msg := ts.adminDo("PUT", "/admin/settings", bad.body).wantError(400, "invalid_request").message(); !strings.Contains(msg, bad.mentions) {
			t.Errorf("refusal %q does not mention %q", msg, bad.mentions)
		}
	}
	if got, _ := ts.db.Settings(context.Background()); len(got.Domains.Redirects) != 0 || got.Domains.Primary != "" {
		t.Errorf("a refused PUT changed the settings: %+v", got)
	}

	// A pending domain may still redirect to a verified one or to the
	// default address, also through another pending redirect source: where
	// the flattened chain lands is what counts.
	ts.adminDo("POST", "/admin/domains", `{"name":"older.example.com"}`).wantStatus(201)
	var saved store.Settings
	ts.adminDo("PUT", "/admin/settings", `{"domains":{"primary":"live.example.com","redirects":[
		{"from":"older.example.com","to":"pending.example.com"},
		{"from":"pending.example.com","to":"live.example.com"}]}}`).wantStatus(200).decode(&saved)
	if r := saved.Domains.Redirects; len(r) != 2 || r[0].To != "live.example.com" || r[1].To != "live.example.com" {
		t.Errorf("saved %+v", saved.Domains)
	}
	ts.adminDo("PUT", "/admin/settings", `{"domains":{"primary":"localhost","redirects":[{"from":"pending.example.com","to":"localhost"}]}}`).wantStatus(200)
}

// TestAddDomainSpecialUseNames: names that no public CA certifies are
// refused with 400 over the API; .test only because the test server passes
// AllowTestTLDs, as --allow-test-tlds does.
func TestAddDomainSpecialUseNames(t *testing.T) {
	ts := newTestServer(t)
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)
	for _, name := range []string{"shop.localhost", "x.invalid", "docs.example", "printer.local", "abc.onion", "wiki.internal", "name.alt", "shop.zz"} {
		if msg := ts.adminDo("POST", "/admin/domains", `{"name":"`+name+`"}`).wantError(400, "invalid_request").message(); !strings.Contains(msg, name) {
			t.Errorf("refusal of %s: %q", name, msg)
		}
	}
	ts.adminDo("POST", "/admin/domains", `{"name":"shop.test"}`).wantStatus(201)

	// An IDN apex: the ALIAS note shows the readable name beside the
	// punycode the provider needs.
	var idn store.Domain
	ts.adminDo("POST", "/admin/domains", `{"name":"Bücher.de"}`).wantStatus(201).decode(&idn)
	if !idn.Apex || len(idn.Records) == 0 || !strings.Contains(idn.Records[0].Note, "xn--bcher-kva.de is how DNS writes bücher.de") {
		t.Errorf("IDN apex records %+v", idn.Records)
	}
}

// TestAddDomainWithoutCNAMETarget: in development (no --domain, no
// --cname-target) the project answer says no target is known and adding a
// domain is refused with cname_target_unknown, instead of records with an
// empty value.
func TestAddDomainWithoutCNAMETarget(t *testing.T) {
	ts := newTestServer(t, withDomains(t, domains.Config{Checker: &dnscheck.Checker{}}))
	var p struct{ CNAMETarget *string }
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200).decode(&p)
	if p.CNAMETarget == nil || *p.CNAMETarget != "" {
		t.Errorf("cnameTarget %v, want present and empty", p.CNAMETarget)
	}
	msg := ts.adminDo("POST", "/admin/domains", `{"name":"shop.example.com"}`).wantError(409, store.ENOCNAMETARGET).message()
	for _, flag := range []string{"--domain", "--cname-target"} {
		if !strings.Contains(msg, flag) {
			t.Errorf("message %q does not name %s", msg, flag)
		}
	}
	ts.adminDo("GET", "/admin/domains/shop.example.com", "").wantError(404, "not_found")

	withTarget := newTestServer(t)
	withTarget.adminDo("GET", "/admin/project", "").wantStatus(200).decode(&p)
	if p.CNAMETarget == nil || *p.CNAMETarget != domaintest.CNAMETarget {
		t.Errorf("cnameTarget %v, want %s", p.CNAMETarget, domaintest.CNAMETarget)
	}
}

// TestAddWithACMEDNSZoneShowsTheRecordsOfAMove: with --acme-dns-zone the
// 201 answer lists, beside the CNAME that points the domain here, the
// ownership TXT (the token) and the _acme-challenge CNAME (one label plus
// the zone), each with its full name and a sentence on why; the token and
// label stay as they are. Without the zone, only the CNAME, as before.
func TestAddWithACMEDNSZoneShowsTheRecordsOfAMove(t *testing.T) {
	ts := newTestServer(t, withDomains(t, domains.Config{
		Platform:    dnscheck.Platform{CNAMETarget: domaintest.CNAMETarget},
		Checker:     &dnscheck.Checker{Resolvers: []string{"127.0.0.1:9"}, Timeout: 100 * time.Millisecond},
		ACMEDNSZone: "acme.plat.test",
	}))
	ts.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)
	var added store.Domain
	ts.adminDo("POST", "/admin/domains", `{"name":"shop.example.com"}`).wantStatus(201).decode(&added)
	byPurpose := map[string]store.DNSRecord{}
	for _, r := range added.Records {
		byPurpose[r.Purpose] = r
	}
	txt, cname, traffic := byPurpose["ownership"], byPurpose["delegation"], byPurpose[""]
	if len(added.Records) != 3 || traffic.Type != "CNAME" || traffic.Value != domaintest.CNAMETarget {
		t.Fatalf("records %+v", added.Records)
	}
	if txt.Type != "TXT" || txt.Name != "_petstore-challenge.shop.example.com" || txt.Host != "_petstore-challenge.shop" || len(txt.Value) < 20 || txt.Note == "" {
		t.Errorf("ownership record %+v", txt)
	}
	label, ok := strings.CutSuffix(cname.Value, ".acme.plat.test")
	if cname.Type != "CNAME" || cname.Name != "_acme-challenge.shop.example.com" || !ok || label == "" || strings.Contains(label, ".") || cname.Note == "" {
		t.Errorf("delegation record %+v", cname)
	}
	if added.Delegation == nil || added.Delegation.Token != txt.Value || added.Delegation.Target != cname.Value || added.Delegation.Label != label {
		t.Errorf("delegation %+v", added.Delegation)
	}
	// Stable: a failed verify keeps them; another domain gets its own.
	var got store.Domain
	ts.adminDo("POST", "/admin/domains/shop.example.com/verify", "").wantStatus(200).decode(&got)
	if got.State != store.DomainPending || *got.Delegation != (store.Delegation{Token: txt.Value, Target: cname.Value, Label: label}) {
		t.Errorf("after a verify that reached no DNS: %s %+v", got.State, got.Delegation)
	}
	var other store.Domain
	ts.adminDo("POST", "/admin/domains", `{"name":"www.example.com"}`).wantStatus(201).decode(&other)
	if other.Delegation == nil || other.Delegation.Label == label || other.Delegation.Token == txt.Value {
		t.Errorf("a second domain's delegation %+v, the first's %+v", other.Delegation, added.Delegation)
	}

	plain := newTestServer(t)
	plain.adminDo("PATCH", "/admin/project", `{"plan":"pro"}`).wantStatus(200)
	var withoutZone store.Domain
	plain.adminDo("POST", "/admin/domains", `{"name":"shop.example.com"}`).wantStatus(201).decode(&withoutZone)
	if len(withoutZone.Records) != 1 || withoutZone.Records[0].Purpose != "" || withoutZone.Delegation != nil {
		t.Errorf("without the zone: %+v, %+v", withoutZone.Records, withoutZone.Delegation)
	}
}
