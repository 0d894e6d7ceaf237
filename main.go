// Command petstore serves the pet-store API and its reference site from a
// bbolt file, or from a PostgreSQL database several instances share.
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
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"petstore/buildinfo"
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
	// SIGHUP upgrades in place: caught from the start, so that an early one
	// does not end the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// One per process (tableflip's rule): tests calling run go without.
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

// runWith starts the service and blocks until ctx ends, then shuts down
// gracefully. It is upgraded in place on up's signals.
func runWith(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer, up upgrades) (err error) {
	if len(args) > 0 && args[0] == "migrate" {
		return runMigrate(ctx, args[1:], getenv, stdout)
	}
	// "petstore help" is what people type first.
	if len(args) == 1 && args[0] == "help" {
		args = []string{"--help"}
	}
	if len(args) > 0 && args[0] == "unrevoke" {
		return runUnrevoke(ctx, args[1:], getenv, stdout)
	}
	// Not a flag: PETSTORE_VERSION in a service's environment must not make
	// it print and exit.
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
	// logOut drops lines rather than wait for a stdout nobody reads.
	logOut := accesslog.NewWriter(stdout, 100*time.Millisecond)
	defer logOut.Close(2 * time.Second)
	var logHandler slog.Handler = slog.NewTextHandler(logOut, nil)
	if cfg.logJSON {
		logHandler = slog.NewJSONHandler(logOut, nil)
	}
	log := slog.New(logHandler)
	// Libraries' logging through log or slog's default (certmagic's) goes to
	// this log, never to stderr.
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

	// The documents and the site need no store: prepared beside start-up, so
	// that an upgrade's new process has them before the old one stops.
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
	hand := &handover{up: up, cfg: cfg, log: log}
	defer func() { hand.done(err) }()
	gogcSet := getenv("GOGC") != ""
	if err := hand.beforeStore(ctx, func() error {
		// Start-up's garbage is handed back here, while the old process still
		// serves.
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
		// A first start that fails leaves no data file; it is removed while this
		// process still holds its lock.
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
	engine := events.New(events.Config{Store: db, Policy: policy, Retention: cfg.eventRetention, Log: log, Timeout: eventsTimeout})
	documents, err := prepared()
	if err != nil {
		return err
	}
	srv, err := handlers.New(handlers.Config{
		Store: db, File: kind.file, Shared: kind.shared, Spec: spec, Prepared: documents, Logger: log, AccessLog: logOut, AccessLogJSON: cfg.logJSON, RateLimit: cfg.rateLimit, MaxInFlight: cfg.maxInFlight, Domains: manager,
		MaxClientInFlight: cfg.maxClientInFlight,
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
		return server.NewHTTPServer(h, tc, errorLog, cfg.headerTimeout)
	}
	// The sockets are bound already (bindSockets).
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
	// The deploy and the admin token are written only once everything is
	// started, the banner right after: a failed start leaves no token nobody
	// saw (docs/operations.md, "The first start"). Without PostgreSQL the
	// service starts anyway and writes them once it can; /readyz says why not.
	var newToken string
	if err = srv.RecordDeploy(ctx); err == nil {
		newToken, err = db.EnsureAdminToken(ctx, cfg.adminToken)
	}
	deferStart := store.ErrorCode(err) == store.EUNAVAILABLE
	if err != nil && !deferStart {
		return err
	}
	if deferStart {
		srv.AwaitAdminToken(cfg.adminToken)
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
	if hand.upgraded.Load() {
		srv.FinishBackups(ctx, cfg.shutdownTimeout)
	} else {
		srv.Drain()
		// The upgrader's copies of the sockets too: new connections are then
		// refused, where they would wait in the backlog until a reset. An
		// upgrade under way ends, its new process killed, as the log says.
		up.upgrader.Stop()
		hand.upgrading.Wait()
	}
	log.Info("shutting down: finishing in-flight requests")
	srv.EndStreams() // a stream would hold its connection until the timeout
	listeners.Shutdown(cfg.shutdownTimeout, srv.AbortBackups, log)
	return nil
}

// handlersNow is the API's clock for sunset dates (nil: time.Now), for
// tests of what clients meet after a sunset.
var handlersNow func() time.Time

// eventsTimeout replaces events.Timeout when set, for tests that wait for a killed process's leases.
var eventsTimeout time.Duration

// storeKind is what the store is beyond store.Store: one of the two is set.
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
	db, err := boltstore.Open(cfg.data, store.Options{Logger: log})
	if err != nil {
		return nil, storeKind{}, err // it names the file and says what is wrong with it
	}
	if r := db.Restored(); r != nil {
		log.Warn("the data file went back in time (put back from a backup): its counters now continue after every id it gave out, the keys revoked since are revoked again, and store.restored is recorded",
			"file", cfg.data, "restored_to", r.RestoredTo, "revoked_again", r.RevokedAgain, "marks", boltstore.MarksPath(cfg.data))
	}
	return db, storeKind{file: db}, nil
}
