package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"petstore/domains"
	"petstore/handlers"
	"petstore/server"
	"petstore/store/postgres"
)

// config is the command line, after the environment filled what it left out.
type config struct {
	listen, data, database, domain, cnameTarget string
	httpsListen, httpListen                     string
	acmeCARoot, acmeEmail                       string
	acmeCAs                                     listFlag
	acmeProfile                                 string
	renewInterval                               time.Duration
	acmeCAAIdentities                           listFlag
	adminToken                                  string
	publicIPs, dnsResolvers                     listFlag
	corsOrigins                                 listFlag
	proxyProtocolFrom                           listFlag
	rateLimit                                   float64
	cpuProfile                                  string
	maxInFlight, maxClientConns                 int
	maxClientInFlight                           int
	headerTimeout                               time.Duration
	shutdownTimeout                             time.Duration
	logJSON                                     bool
	allowTestTLDs, dnsAllowPrivate              bool
	eventRetention                              time.Duration
	idempotencyTTL                              time.Duration
	idempotencyMaxKeys                          int
	webhookAllowPrivate                         bool
	maxEventStreams                             int
	maxEventStreamsPerClient                    int
	acmeDNSZone, dnsListen                      string
	acmeDNSNameservers                          listFlag
	databaseTimeouts                            postgres.Timeouts
	databaseMaxConns                            int
	restoreMarks                                string
}

// parseConfig reads flags; each has an environment twin that applies when
// it is not given.
func parseConfig(args []string, getenv func(string) string, out io.Writer) (config, error) {
	var c config
	flags := newFlags("petstore", serveUsage, out)
	basics := flags.group("Basics")
	basics.String(&c.listen, "listen", "localhost:8080", "plain-HTTP `host:port` to listen on (development, or behind a TLS-terminating proxy)")
	basics.String(&c.data, "data", "./petstore.db", "the bbolt data `file`; created at first start")
	basics.String(&c.adminToken, "admin-token", "", "admin bearer `token` for the admin API and dashboard, at least 32 characters; giving one replaces the stored one").
		DefaultMeans("generated at first start and printed once")
	basics.List(&c.corsOrigins, "cors-origin", "`origin` (scheme://host[:port], or *) whose browser scripts may call the public API (repeatable or comma-separated)").
		DefaultMeans("none (CORS off)")
	basics.Bool(&c.logJSON, "log-json", "write logs as JSON lines instead of key=value text")

	tls := flags.group("TLS and custom domains")
	tls.String(&c.domain, "domain", "", "platform `domain`: the project is served at <slug>.<domain>").
		DefaultMeans("none: development, served at localhost")
	tls.String(&c.httpsListen, "https-listen", "", "TLS `host:port` with automatic certificates, :443 in production")
	tls.String(&c.httpListen, "http-listen", "", "HTTP `host:port` beside it for ACME challenges and redirects to HTTPS, :80 in production")
	tls.String(&c.cnameTarget, "cname-target", "", "the `name` customers' CNAME records must point at").
		DefaultMeans("cname.<domain>")
	tls.List(&c.publicIPs, "public-ip", "public `address` shown as the A/AAAA fallback for apex domains (repeatable or comma-separated)")
	tls.String(&c.acmeEmail, "acme-email", "", "ACME account contact `address`")
	tls.List(&c.acmeCAs, "acme-ca", "ACME directory `URL` (repeatable or comma-separated: tried in order for each certificate)").
		DefaultMeans("Let's Encrypt, " + domains.DefaultCA)
	tls.String(&c.acmeCARoot, "acme-ca-root", "", "PEM `file` of extra roots to trust for the ACME CAs (test CAs)")
	tls.String(&c.acmeProfile, "acme-profile", "", "ACME certificate `profile` to ask for").
		DefaultMeans("the CA's default")
	tls.List(&c.acmeCAAIdentities, "acme-caa-identity", "issuer `domain` the CA accepts in CAA records (repeatable)").
		DefaultMeans("the CA directory's meta.caaIdentities")
	tls.Duration(&c.renewInterval, "renew-interval", 10*time.Minute, "how often certificate maintenance looks for certificates to renew")
	tls.List(&c.dnsResolvers, "dns-resolver", "`host:port` of a DNS server to start from (repeatable or comma-separated)").
		DefaultMeans("the system's")
	tls.String(&c.acmeDNSZone, "acme-dns-zone", "", "`zone` delegated to this service for ACME DNS-01 challenges, such as acme.petstore.example.com").
		DefaultMeans("none: no DNS server")
	tls.String(&c.dnsListen, "dns-listen", "", "`host:port` where the --acme-dns-zone server answers, over UDP and TCP").
		DefaultMeans(":53 with --acme-dns-zone")
	tls.List(&c.acmeDNSNameservers, "acme-dns-ns", "host `name` of this service that the --acme-dns-zone delegation names, for the zone's NS records (repeatable or comma-separated)").
		DefaultMeans("ns.<acme-dns-zone>")

	limits := flags.group("Limits")
	limits.Float64(&c.rateLimit, "rate-limit", handlers.DefaultRateLimit, "requests per second per client address, with a burst of twice that; 0 turns it off")
	limits.Int(&c.maxInFlight, "max-in-flight", handlers.DefaultMaxInFlight, "requests served at once; past it, 503 with Retry-After")
	limits.Int(&c.maxClientInFlight, "max-client-in-flight", handlers.DefaultMaxClientInFlight, "requests of one client address (IPv6: its /64) served at once; past it, 503 with Retry-After; 0 turns the cap off")
	limits.Duration(&c.headerTimeout, "header-timeout", server.DefaultHeaderTimeout, "how long a client may take to send its request headers before its connection is closed")
	limits.Int(&c.maxClientConns, "max-client-conns", server.DefaultMaxClientConns, "connections one client address (IPv6: its /64) may hold open at once; past it, new ones are closed; 0 turns the cap off")
	limits.Int(&c.maxEventStreams, "max-event-streams", handlers.DefaultMaxStreams, "event streams (GET /events, GET /admin/events as Server-Sent Events) open at once, a tenth of them kept for GET /admin/events; past it, 503 with Retry-After")
	limits.Int(&c.maxEventStreamsPerClient, "max-event-streams-per-client", handlers.DefaultMaxStreamsPerClient, "public event streams (GET /events) one client address (IPv6: its /64) may have open at once; past it, 429 with Retry-After")
	limits.Duration(&c.eventRetention, "event-retention", 7*24*time.Hour, "how long events and webhook delivery logs are kept; older ones are pruned in the background")
	limits.Duration(&c.idempotencyTTL, "idempotency-ttl", handlers.DefaultIdempotencyTTL, "how long the answer to a POST sent with an Idempotency-Key is kept for its retries; later the key is free again")
	limits.Int(&c.idempotencyMaxKeys, "idempotency-max-keys", handlers.DefaultIdempotencyMaxKeys, "the most Idempotency-Key answers kept; past it the oldest are forgotten first")
	limits.Duration(&c.shutdownTimeout, "shutdown-timeout", 15*time.Second, "how long shutdown waits for requests in flight before it closes their connections and aborts backups")

	instances := flags.group("Several instances")
	instances.String(&c.database, "database", "", "postgres:// `URL` of a PostgreSQL database that several instances share, instead of --data").
		DefaultMeans("none: the bbolt file of --data")
	instances.Duration(&c.databaseTimeouts.Connect, "database-connect-timeout", postgres.DefaultTimeouts.Connect, "how long connecting to one host of --database may take; a multi-host URL then tries the next host")
	instances.Duration(&c.databaseTimeouts.Acquire, "database-acquire-timeout", postgres.DefaultTimeouts.Acquire, "how long a request waits for a free connection of the pool before it gets 503 database_unavailable")
	instances.Duration(&c.databaseTimeouts.Statement, "database-statement-timeout", postgres.DefaultTimeouts.Statement, "how long one statement may run (PostgreSQL's statement_timeout) before the request gets 503 database_unavailable")
	instances.Duration(&c.databaseTimeouts.Transaction, "database-transaction-timeout", postgres.DefaultTimeouts.Transaction, "how long one transaction, its commit included, may take before the request gets 503 database_unavailable")
	instances.Int(&c.databaseMaxConns, "database-max-conns", 0, "connections this instance's pool may open to --database; keeps the URL one that pg_dump and psql accept").
		DefaultMeans("the URL's pool_max_conns, else 16")
	instances.String(&c.restoreMarks, "restore-marks", "", "`file` where this instance keeps, outside --database, the highest ids it knows were given out and the API keys revoked, so that a restore of an older dump undoes neither (one file per instance)").
		DefaultMeans("restore-marks.json in systemd's $STATE_DIRECTORY, else kept in memory only")
	instances.List(&c.proxyProtocolFrom, "proxy-protocol-from", "`address` or CIDR range of a TCP load balancer whose connections, on every listener, begin with a PROXY protocol header (v1 or v2) naming the client (repeatable or comma-separated)").
		DefaultMeans("none: no header is read")

	development := flags.group("Development and tests")
	development.Bool(&c.allowTestTLDs, "allow-test-tlds", "let names under .test be added as custom domains (tests and staging with their own DNS and CA)")
	development.Bool(&c.dnsAllowPrivate, "dns-allow-private", "also ask domains' nameservers at loopback, private or link-local addresses (--dns-resolver is always asked)")
	development.Bool(&c.webhookAllowPrivate, "webhook-allow-private", "let webhooks be delivered to loopback, private and link-local addresses (tests and internal receivers)")
	development.String(&c.cpuProfile, "cpu-profile", "", "write a CPU profile to this `file` until shutdown (read it with go tool pprof)")
	given, err := flags.parse(args, getenv, false)
	if err != nil {
		return c, err
	}
	if len(c.acmeCAs) == 0 {
		c.acmeCAs = listFlag{domains.DefaultCA}
	}
	for _, src := range c.proxyProtocolFrom {
		if _, err := netip.ParsePrefix(src); err != nil {
			if _, err := netip.ParseAddr(src); err != nil {
				return c, fmt.Errorf("--proxy-protocol-from: %q is neither an IP address nor a CIDR range", src)
			}
		}
	}
	for _, bad := range []struct {
		is  bool
		why string
	}{
		{c.idempotencyMaxKeys <= 0, "--idempotency-max-keys must be positive"},
		{c.database != "" && (given["data"] || getenv("PETSTORE_DATA") != ""), "--data and --database name two stores: give one (--database for PostgreSQL, --data for a bbolt file)"},
		{c.database != "" && !isPostgresURL(c.database), "--database must be a postgres:// URL"},
		{c.databaseMaxConns < 0, "--database-max-conns must be 0 (the default) or more"},
		{c.maxClientConns < 0, "--max-client-conns must be 0 (off) or more"},
		{c.shutdownTimeout < 0, "--shutdown-timeout must not be negative"},
		{c.rateLimit < 0, "--rate-limit must be 0 (off) or more"},
	} {
		if bad.is {
			return c, errors.New(bad.why)
		}
	}
	for name, d := range map[string]time.Duration{
		"--header-timeout": c.headerTimeout, "--renew-interval": c.renewInterval, "--idempotency-ttl": c.idempotencyTTL,
		"--database-connect-timeout": c.databaseTimeouts.Connect, "--database-acquire-timeout": c.databaseTimeouts.Acquire,
		"--database-statement-timeout": c.databaseTimeouts.Statement, "--database-transaction-timeout": c.databaseTimeouts.Transaction,
	} {
		if d <= 0 {
			return c, fmt.Errorf("%s must be positive", name)
		}
	}
	c.restoreMarks = defaultMarks(c.restoreMarks, c.database, getenv)
	if c.maxClientInFlight <= 0 {
		c.maxClientInFlight = -1 // off: handlers.Config's 0 means its default
	}
	if c.cnameTarget == "" && c.domain != "" {
		c.cnameTarget = "cname." + c.domain
	}
	for _, o := range c.corsOrigins {
		if err := handlers.CheckCORSOrigin(o); err != nil {
			return c, fmt.Errorf("--cors-origin: %w", err)
		}
	}
	return c, checkAdminToken(c.adminToken)
}

// defaultMarks is --restore-marks of a store on database, or its default
// in systemd's state directory.
func defaultMarks(path, database string, getenv func(string) string) string {
	if dir, _, _ := strings.Cut(getenv("STATE_DIRECTORY"), ":"); path == "" && database != "" && dir != "" {
		return filepath.Join(dir, "restore-marks.json")
	}
	return path
}

func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// minAdminTokenLength keeps a given admin token out of reach of guessing;
// generated ones are far longer.
const minAdminTokenLength = 32

// checkAdminToken refuses a given admin token that is short, or has white
// space around it, which clients trim so it would never match.
func checkAdminToken(token string) error {
	switch {
	case token == "":
		return nil // none given: the stored one, or a generated one
	case strings.TrimSpace(token) != token:
		return errors.New("--admin-token (PETSTORE_ADMIN_TOKEN) has white space at its start or end; give it without")
	case utf8.RuneCountInString(token) < minAdminTokenLength:
		return fmt.Errorf("--admin-token (PETSTORE_ADMIN_TOKEN) is %d characters long; it must have at least %d", utf8.RuneCountInString(token), minAdminTokenLength)
	}
	return nil
}

// dataDescription names the store for people: the file, or the database
// URL without password.
func (c config) dataDescription() string {
	if c.database == "" {
		return c.data
	}
	if u, err := url.Parse(c.database); err == nil {
		return u.Redacted()
	}
	return "(a PostgreSQL database)"
}
