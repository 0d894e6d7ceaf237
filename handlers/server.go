// Package handlers is the HTTP face of Petstore: Echo, request validation
// against the embedded OpenAPI documents, authentication, and the mapping
// of every failure to an Error body.
package handlers

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"petstore/domains"
	"petstore/events"
	"petstore/metrics"
	"petstore/server/accesslog"
	"petstore/store"
	"petstore/web"
)

// adminSpec lives beside the handlers because it is never published.
//
//go:embed openapi-admin.yaml
var adminSpec []byte

// Defaults for the limits that Config leaves at zero.
const (
	DefaultBodyLimit = 64 << 10
	DefaultRateLimit = 50 // requests per second per client address
	// DefaultMaxInFlight caps requests served at once (503 past it): far
	// above low-latency load on a small VM, far below exhausting memory.
	DefaultMaxInFlight = 1024
	// DefaultMaxClientInFlight caps one client's requests served at once, so
	// that a few clients cannot take every slot.
	DefaultMaxClientInFlight = 64
	// DefaultCredentialFailures is failed credential attempts per client
	// address per minute before 429.
	DefaultCredentialFailures = 10
)

// Config is everything the HTTP layer needs; main fills it from flags.
type Config struct {
	Store Store
	// File and Shared are Store again, at most one set. File: a bbolt file
	// this process owns, which backs itself up and reports damage. Shared:
	// PostgreSQL shared by instances, where API keys are looked up on every
	// request and each resource's requests hold a share of the pool.
	File   FileStore
	Shared SharedStore
	// Spec is openapi.yaml, embedded by main.
	Spec   []byte
	Logger *slog.Logger
	// Metrics is the registry GET /metrics serves and the gauges join.
	Metrics *metrics.Registry
	// AccessLog, when set, receives each request's line directly, formatted
	// as slog's TextHandler (JSONHandler with AccessLogJSON) would. It must be
	// safe for concurrent use; nil sends the lines through Logger.
	AccessLog     io.Writer
	AccessLogJSON bool
	// Now is the clock for sunset dates; nil means time.Now.
	Now func() time.Time
	// BodyLimit caps request bodies in bytes; 0 means DefaultBodyLimit.
	BodyLimit int64
	// RateLimit is requests per second per client address, burst twice that;
	// 0 turns the limiter off.
	RateLimit float64
	// Domains is the custom-domain manager.
	Domains *domains.Manager
	// MaxInFlight caps requests served at once; 0 means DefaultMaxInFlight.
	MaxInFlight int
	// MaxClientInFlight caps one client's requests served at once; 0 means
	// DefaultMaxClientInFlight, negative no cap.
	MaxClientInFlight int
	// CORSOrigins are the origins (scheme://host[:port], or * for any)
	// whose scripts may call the public API; none turns CORS off.
	CORSOrigins []string
	// CredentialFailures is failed credential attempts (API key or admin
	// token) per client address per minute before every credential it sends
	// gets 429; 0 means DefaultCredentialFailures.
	CredentialFailures int
	// Events delivers webhooks and feeds the event streams; nil serves the
	// events as JSON pages only.
	Events *events.Engine
	// WebhookPolicy judges webhook URLs when they are saved.
	WebhookPolicy events.Policy
	// Development is a developer's start: the dashboard says what is simulated.
	Development bool
	// MaxStreams caps the event streams open at once; 0 means the default.
	MaxStreams int
	// MaxStreamsPerClient caps one client address's public event streams; 0
	// means the default. A tenth of MaxStreams is kept for GET /admin/events.
	MaxStreamsPerClient int
	// Prepared is what Prepare(Spec) returned, if done early; nil: New does.
	Prepared *Prepared
	// IdempotencyTTL is how long a create's answer under an Idempotency-Key
	// is kept; 0 means DefaultIdempotencyTTL.
	IdempotencyTTL time.Duration
	// IdempotencyMaxKeys bounds the answers kept; 0 means the default.
	IdempotencyMaxKeys int
}

// Prepared is the part of a Server that depends on the documents only,
// most of New's work, done early by an upgrade's process awaiting its store.
type Prepared struct {
	public, admin *apiDoc
	site          *web.Site
}

// Prepare parses both documents and renders the site from openapi.yaml.
func Prepare(spec []byte) (*Prepared, error) {
	public, err := loadDoc(spec)
	if err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	admin, err := loadDoc(adminSpec)
	if err != nil {
		return nil, fmt.Errorf("openapi-admin.yaml: %w", err)
	}
	page, err := web.RenderReference(public.doc)
	if err != nil {
		return nil, fmt.Errorf("rendering the reference page: %w", err)
	}
	site, err := web.NewSite(page)
	if err != nil {
		return nil, err
	}
	return &Prepared{public: public, admin: admin, site: site}, nil
}

// Server serves the public API, the admin API and the site.
type Server struct {
	cfg          Config
	store        Store
	log          *slog.Logger
	access       *accesslog.Logger // nil: access lines go through log
	now          func() time.Time
	echo         *echo.Echo
	public       *apiDoc
	admin        *apiDoc
	site         *web.Site
	domains      *domains.Manager
	valOpts      openapi3filter.Options
	aborted      context.Context
	abortBackups context.CancelFunc
	// backups counts the downloads in flight (FinishBackups); draining is
	// set once this process stops serving for good (Drain); notReady while
	// readyz finds a failure that it logged.
	backups            atomic.Int64
	draining, notReady atomic.Bool
	// validated holds, as routeKey, the routes the validator checks.
	validated map[string]bool
	failures  *failureLimiter
	// streams counts the open event streams; EndStreams ends them all.
	streams    streams
	streamsEnd context.Context
	endStreams context.CancelFunc
	inFlight   *inFlight
	// limiter is nil when the rate limit is off.
	limiter      *rateLimiter
	ratePolicy   []string
	keysInFlight keysInFlight
	// unknownHosts and refusedByRate summarize 421s and 429s in the log.
	unknownHosts, refusedByRate *accesslog.Summary
	storeDown                   storeDown
	// awaitedToken is the admin token given at start while it is not
	// stored yet (AwaitAdminToken); nil or "" otherwise.
	awaitedToken atomic.Pointer[string]
}

// EndStreams ends the open event streams at shutdown, which each would
// hold until the timeout; clients reconnect from their last event.
func (s *Server) EndStreams() { s.endStreams() }

// Drain makes /readyz answer 503 from now on, at a shutdown: the
// connections a balancer keeps open are still answered, and it must stop
// sending them traffic. Not at an upgrade, whose new process serves the
// same sockets.
func (s *Server) Drain() { s.draining.Store(true) }

// New builds the server: parses both OpenAPI documents, registers every
// route, and fails when a route and the spec disagree.
func New(cfg Config) (*Server, error) { return newServer(cfg, true) }

// orDefault sets a Config field at or below zero to its default.
func orDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// newServer is New; validate false is for the benchmark of what
// validation costs only.
func newServer(cfg Config, validate bool) (*Server, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("handlers: Config.Store is nil")
	case cfg.Domains == nil:
		return nil, errors.New("handlers: Config.Domains is nil")
	case cfg.Metrics == nil:
		return nil, errors.New("handlers: Config.Metrics is nil")
	case cfg.CredentialFailures < 0:
		return nil, errors.New("handlers: Config.CredentialFailures is negative")
	case cfg.File != nil && cfg.Shared != nil:
		return nil, errors.New("handlers: Config.File and Config.Shared are both set: a store is one or the other")
	case cfg.File != nil && any(cfg.File) != any(cfg.Store), cfg.Shared != nil && any(cfg.Shared) != any(cfg.Store):
		return nil, errors.New("handlers: Config.File or Config.Shared is not Config.Store")
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	orDefault(&cfg.BodyLimit, DefaultBodyLimit)
	orDefault(&cfg.MaxInFlight, DefaultMaxInFlight)
	cfg.MaxClientInFlight = cmp.Or(cfg.MaxClientInFlight, DefaultMaxClientInFlight) // negative: no cap
	for _, o := range cfg.CORSOrigins {
		if err := CheckCORSOrigin(o); err != nil {
			return nil, err
		}
	}
	orDefault(&cfg.IdempotencyTTL, DefaultIdempotencyTTL)
	orDefault(&cfg.IdempotencyMaxKeys, DefaultIdempotencyMaxKeys)
	orDefault(&cfg.CredentialFailures, DefaultCredentialFailures) // negative refused above
	orDefault(&cfg.MaxStreams, DefaultMaxStreams)
	orDefault(&cfg.MaxStreamsPerClient, DefaultMaxStreamsPerClient)
	if cfg.Prepared == nil {
		var err error
		if cfg.Prepared, err = Prepare(cfg.Spec); err != nil {
			return nil, err
		}
	}
	s := &Server{
		domains: cfg.Domains,
		cfg:     cfg,
		store:   cfg.Store,
		log:     cfg.Logger,
		now:     cfg.Now,
		echo:    echo.New(),
		public:  cfg.Prepared.public,
		admin:   cfg.Prepared.admin,
		site:    cfg.Prepared.site,

		validated: map[string]bool{},
		failures:  newFailureLimiter(cfg.CredentialFailures),
	}
	gauges := []prometheus.Collector{metrics.State(cfg.Store, cfg.Domains, cfg.Now), metrics.EventStreams(&s.streams)}
	if q, ok := cfg.Store.(store.QueueReader); ok {
		gauges = append(gauges, metrics.WebhookQueue(q, cfg.Now))
	}
	if cfg.Events != nil {
		gauges = append(gauges, metrics.WebhookAttempts(cfg.Events.Stats()))
	}
	if cfg.Shared != nil {
		gauges = append(gauges, metrics.Pool(cfg.Shared))
	}
	if cfg.File != nil {
		gauges = append(gauges, s.watchDamage(cfg.File))
	}
	for _, g := range gauges {
		if err := s.cfg.Metrics.Register(g); err != nil {
			return nil, fmt.Errorf("handlers: Config.Metrics: %w", err)
		}
	}
	s.aborted, s.abortBackups = context.WithCancel(context.Background())
	s.streamsEnd, s.endStreams = context.WithCancel(context.Background())
	if cfg.AccessLog != nil {
		s.access = accesslog.New(cfg.AccessLog, cfg.AccessLogJSON)
	}
	s.valOpts = openapi3filter.Options{
		AuthenticationFunc: s.authenticate,
		// Defaults are applied by the handlers and the store; the validator
		// applying them would re-encode every body.
		SkipSettingDefaults: true,
		// Catches clients that send data they think is used.
		RejectWhenRequestBodyNotSpecified: true,
	}
	s.valOpts.WithCustomSchemaErrorFunc(schemaReason)

	e := s.echo
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	// The peer address: a client must not choose its own rate-limit bucket.
	e.IPExtractor = echo.ExtractIPDirect()
	if err := s.routes(validate); err != nil {
		return nil, err
	}
	return s, nil
}

// ServeHTTP makes the server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.echo.ServeHTTP(w, r)
}
