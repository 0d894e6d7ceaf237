// Command petstore serves the pet-store API and its reference site from one
// bbolt file. Run it with no flags for local development.
package main

import (
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"petstore/buildinfo"
	"petstore/domains"
	"petstore/events"
	"petstore/handlers"
	"petstore/metrics"
	"petstore/server"
	"petstore/server/accesslog"
	"petstore/store"
	"petstore/store/boltstore"
	"petstore/store/postgres"
)

//go:embed openapi.yaml
var spec []byte

func main() {
	// SIGHUP upgrades in place: caught from the start, so that one sent
	// early does not end the process (its default).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// One per process (tableflip's rule): tests that call run many times
	// go without.
	upgrader, err := server.NewUpgrader()
	if err != nil {
		fmt.Fprintln(os.Stderr, "petstore: taking the sockets of the upgraded process:", err)
		os.Exit(1)
	}
	defer upgrader.Stop()
	if err := runWith(ctx, os.Args[1:], os.Getenv, os.Stdout, upgrades{upgrader: upgrader, signals: hup}); err != nil {
		fmt.Fprintln(os.Stderr, "petstore:", err)
		os.Exit(1)
	}
}

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

// parseConfig reads flags; each flag --some-name has an environment twin
// PETSTORE_SOME_NAME that applies when the flag is not given.
func parseConfig(args []string, getenv func(string) string, out io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("petstore", flag.ContinueOnError)
	fs.SetOutput(out)
	flags := newGroupedFlags(fs, serveUsage)
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
	given, err := parseFlags(fs, args, getenv)
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
	if c.headerTimeout <= 0 {
		return c, errors.New("--header-timeout must be positive")
	}
	if c.renewInterval <= 0 {
		return c, errors.New("--renew-interval must be positive")
	}
	if c.idempotencyTTL <= 0 {
		return c, errors.New("--idempotency-ttl must be positive")
	}
	if c.idempotencyMaxKeys <= 0 {
		return c, errors.New("--idempotency-max-keys must be positive")
	}
	if c.database != "" && (given["data"] || getenv("PETSTORE_DATA") != "") {
		return c, errors.New("--data and --database name two stores: give one (--database for PostgreSQL, --data for a bbolt file)")
	}
	if c.database != "" && !isPostgresURL(c.database) {
		return c, errors.New("--database must be a postgres:// URL")
	}
	for name, d := range map[string]time.Duration{
		"--database-connect-timeout": c.databaseTimeouts.Connect, "--database-acquire-timeout": c.databaseTimeouts.Acquire,
		"--database-statement-timeout": c.databaseTimeouts.Statement, "--database-transaction-timeout": c.databaseTimeouts.Transaction,
	} {
		if d <= 0 {
			return c, fmt.Errorf("%s must be positive", name)
		}
	}
	if dir, _, _ := strings.Cut(getenv("STATE_DIRECTORY"), ":"); c.restoreMarks == "" && c.database != "" && dir != "" {
		c.restoreMarks = filepath.Join(dir, "restore-marks.json")
	}
	if c.databaseMaxConns < 0 {
		return c, errors.New("--database-max-conns must be 0 (the default) or more")
	}
	if c.cnameTarget == "" && c.domain != "" {
		c.cnameTarget = "cname." + c.domain
	}
	if c.maxClientConns < 0 {
		return c, errors.New("--max-client-conns must be 0 (off) or more")
	}
	if c.shutdownTimeout < 0 {
		return c, errors.New("--shutdown-timeout must not be negative")
	}
	if c.rateLimit < 0 {
		return c, errors.New("--rate-limit must be 0 (off) or more")
	}
	for _, o := range c.corsOrigins {
		if err := handlers.CheckCORSOrigin(o); err != nil {
			return c, fmt.Errorf("--cors-origin: %w", err)
		}
	}
	return c, checkAdminToken(c.adminToken)
}

func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// minAdminTokenLength keeps a given admin token out of reach of guessing;
// generated ones are far longer.
const minAdminTokenLength = 32

// checkAdminToken refuses a given admin token that is short, or that has
// white space around it: clients trim it from the header they send, so it
// would never match what was stored.
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

// runWith starts the service and blocks until ctx ends, then shuts down
// gracefully: in-flight requests finish and the data file is closed. It is
// upgraded in place on the signals of up (upgrade.go).
func runWith(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer, up upgrades) (err error) {
	if len(args) > 0 && args[0] == "migrate" {
		return runMigrate(ctx, args[1:], getenv, stdout)
	}
	// "petstore help" is what people type first: the same as --help, not
	// an unexpected argument.
	if len(args) == 1 && args[0] == "help" {
		args = []string{"--help"}
	}
	if len(args) > 0 && args[0] == "unrevoke" {
		return runUnrevoke(ctx, args[1:], getenv, stdout)
	}
	// Not a flag: PETSTORE_VERSION in a service's environment must not turn
	// it into a command that prints and exits.
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		_, err := fmt.Fprintln(stdout, buildinfo.Running)
		return err
	}
	cfg, err := parseConfig(args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	// Everything run writes, the banner included, goes through logOut, which
	// drops lines rather than wait for a stdout nobody reads.
	logOut := accesslog.NewWriter(stdout, 100*time.Millisecond)
	defer logOut.Close(2 * time.Second)
	var logHandler slog.Handler = slog.NewTextHandler(logOut, nil)
	if cfg.logJSON {
		logHandler = slog.NewJSONHandler(logOut, nil)
	}
	log := slog.New(logHandler)
	// What libraries log through the standard log package or slog's
	// default (certmagic's challenge servers and worker panics, and its
	// default logger: domains/certs) goes to this log, never to stderr.
	prevDefault := slog.Default()
	slog.SetDefault(log)
	defer slog.SetDefault(prevDefault)
	logOut.OnDrop(func(n uint64) {
		log.Warn(fmt.Sprintf("dropped %d log lines: the log output does not keep up", n), "dropped", n)
	})
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	// The documents and the site need no store: they are prepared beside
	// the rest of start-up, and the new process of an upgrade in place has
	// them before the old one stops serving (upgrade.go).
	prepared := prepareInBackground(spec)
	serverErrors := server.NewServerErrors(log)
	errorLog := serverErrors.Logger()
	conns, fileLimit, err := server.NewConnGuard(cfg.maxClientConns)
	if err != nil {
		log.Warn("could not raise the limit on open files", "limit", fileLimit, "err", err)
	}
	listeners := server.NewListeners(conns)
	defer listeners.Close()
	sockets, err := bindSockets(cfg, listeners, up.upgrader)
	if err != nil {
		return err
	}
	defer sockets.close()
	hand := newHandover(up, cfg, log)
	defer func() { hand.done(err) }()
	gogcSet := getenv("GOGC") != ""
	if err := hand.beforeStore(ctx, func() error {
		// Start-up's garbage is made once the documents are prepared;
		// handing it back costs tens of milliseconds, spent here while
		// the old process still serves.
		_, err := prepared()
		settleMemoryAfterStart(gogcSet)
		return err
	}); err != nil {
		return err
	}

	_, statErr := os.Stat(cfg.data)
	newFile := cfg.database == "" && errors.Is(statErr, fs.ErrNotExist)
	db, kind, err := openStore(ctx, cfg, log)
	if err != nil {
		return err // it names the file and says what is wrong with it
	}
	defer db.Close()
	started := false
	defer func() {
		// A first start that fails leaves no data file behind. The file is
		// removed while this process still holds its lock, so no other one
		// can have opened it meanwhile.
		if newFile && !started {
			_ = os.Remove(cfg.data)
		}
	}()
	manager, err := newDomainManager(cfg, db, log)
	if err != nil {
		return err
	}
	defer manager.Close()
	dev := development(cfg)
	policy := webhookPolicy(cfg, dev, log)
	engine := events.New(events.Config{Store: db, Policy: policy, Retention: cfg.eventRetention, Log: log})
	documents, err := prepared()
	if err != nil {
		return err
	}
	srv, err := handlers.New(handlers.Config{
		Store: db, File: kind.file, Shared: kind.shared, Spec: spec, Prepared: documents, Logger: log, AccessLog: logOut, AccessLogJSON: cfg.logJSON, RateLimit: cfg.rateLimit, MaxInFlight: cfg.maxInFlight, Domains: manager,
		MaxClientInFlight: clientInFlight(cfg.maxClientInFlight),
		Metrics:           metrics.New(metrics.Connections(conns), metrics.LogDrops(logOut), metrics.Handshakes(serverErrors)),
		CORSOrigins:       cfg.corsOrigins,
		Events:            engine, WebhookPolicy: policy, MaxStreams: cfg.maxEventStreams, MaxStreamsPerClient: cfg.maxEventStreamsPerClient,
		Development:    dev,
		IdempotencyTTL: cfg.idempotencyTTL, IdempotencyMaxKeys: cfg.idempotencyMaxKeys,
		Now: handlersNow,
	})
	if err != nil {
		return err
	}
	background, stopBackground := context.WithCancel(ctx)
	defer stopBackground()

	httpServer := func(h http.Handler, tc *tls.Config) *http.Server {
		hs := server.NewHTTPServer(h, tc, errorLog)
		hs.ReadHeaderTimeout = cfg.headerTimeout
		return hs
	}
	// The sockets are bound already (bindSockets): these only attach
	// their servers.
	plainAddr, err := listeners.ListenAs(server.NameListen, cfg.listen, httpServer(srv, nil))
	if err != nil {
		return listenError("listen", cfg.listen, err)
	}
	if cfg.httpsListen != "" {
		if _, err := listeners.ListenAs(server.NameHTTPS, cfg.httpsListen, httpServer(srv, manager.TLSConfig())); err != nil {
			return listenError("https-listen", cfg.httpsListen, err)
		}
	}
	if cfg.httpListen != "" {
		if _, err := listeners.ListenAs(server.NameHTTP, cfg.httpListen, httpServer(srv.RateLimited(manager.HTTPChallengeHandler(srv.HTTPSRedirect())), nil)); err != nil {
			return listenError("http-listen", cfg.httpListen, err)
		}
	}
	if cfg.acmeDNSZone != "" {
		stop, err := startACMEDNS(cfg, db, log, sockets)
		if err != nil {
			return err
		}
		defer stop()
	}
	// The deploy and then the admin token are written only now, every
	// listener bound and everything else started, and the banner follows
	// the token at once: a start that fails leaves no token that nobody saw
	// (docs/operations.md, "The first start").
	// With PostgreSQL unreachable, or blocking commits, the service starts
	// anyway (liveness is the process) and does these writes once it can;
	// until then /readyz says why not.
	err = srv.RecordDeploy(ctx)
	deferStart := store.ErrorCode(err) == store.EUNAVAILABLE
	if err != nil && !deferStart {
		return err
	}
	var newToken string
	if !deferStart {
		newToken, err = db.EnsureAdminToken(ctx, cfg.adminToken)
		deferStart = store.ErrorCode(err) == store.EUNAVAILABLE
		if err != nil && !deferStart {
			return err
		}
	}
	if deferStart {
		go finishStart(background, db, srv, cfg.adminToken, log)
	}
	started = true
	printBanner(logOut, cfg, plainAddr, newToken)
	if !hand.prepared {
		settleMemoryAfterStart(gogcSet)
	}

	go manager.Run(background)
	delivered := make(chan struct{})
	go func() { engine.Run(background); close(delivered) }()
	defer func() { stopBackground(); <-delivered }()
	go releaseMemoryWhenIdle(background, 5*time.Second)
	go srv.SweepIdempotencyKeys(background)
	serving, err := hand.serving(ctx)
	if err != nil {
		return err
	}
	if err := listeners.Serve(serving); err != nil {
		return err
	}
	log.Info("shutting down: finishing in-flight requests")
	srv.EndStreams() // a stream would hold its connection until the timeout
	listeners.Shutdown(cfg.shutdownTimeout, srv.AbortBackups, log)
	return nil
}

// handlersNow is the API's clock for sunset dates (nil: time.Now). Tests of
// what clients meet after a sunset set it instead of waiting for the date.
var handlersNow func() time.Time

// storeKind is what the opened store is beyond store.Store, as the
// handlers take it: one of the two is set.
type storeKind struct {
	file   handlers.FileStore
	shared handlers.SharedStore
}

// openStore opens the PostgreSQL database of --database, or else the bbolt
// file of --data.
func openStore(ctx context.Context, cfg config, log *slog.Logger) (store.Store, storeKind, error) {
	if cfg.database != "" {
		db, err := postgres.Connect(ctx, cfg.database, store.Options{}, postgres.Config{
			Timeouts: cfg.databaseTimeouts, MaxConns: cfg.databaseMaxConns, Logger: log, Background: true,
			RestoreMarks: cfg.restoreMarks,
		})
		if err != nil {
			return nil, storeKind{}, fmt.Errorf("opening the database %s: %w", cfg.dataDescription(), err)
		}
		return db, storeKind{shared: db}, nil
	}
	db, err := boltstore.Open(cfg.data, store.Options{})
	if err != nil {
		return nil, storeKind{}, err // it names the file and says what is wrong with it
	}
	if r := db.Restored(); r != nil {
		log.Warn("the data file went back in time (put back from a backup): its counters now continue after every id it gave out, the keys revoked since are revoked again, and store.restored is recorded",
			"file", cfg.data, "restored_to", r.RestoredTo, "revoked_again", r.RevokedAgain, "marks", boltstore.MarksPath(cfg.data))
	}
	return db, storeKind{file: db}, nil
}

// dataDescription names the store for people: the file, or the database
// URL without its password.
func (c config) dataDescription() string {
	if c.database == "" {
		return c.data
	}
	if u, err := url.Parse(c.database); err == nil {
		return u.Redacted()
	}
	return "(a PostgreSQL database)"
}

// clientInFlight is --max-client-in-flight as handlers.Config takes it: 0
// (off) there means the default, negative means off.
func clientInFlight(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}
