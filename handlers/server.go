// Package handlers is the HTTP face of Petstore: Echo, request validation
// against the embedded OpenAPI documents, authentication, and the mapping of
// every failure to an Error body. It never touches bbolt; the store does.
package handlers

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
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

// adminSpec is the admin API's own OpenAPI document. It lives beside the
// handlers, not at the top, because it is never published to customers.
//
//go:embed openapi-admin.yaml
var adminSpec []byte

// Defaults for the limits that Config leaves at zero.
const (
	DefaultBodyLimit = 64 << 10
	DefaultRateLimit = 50 // requests per second per client address
	// DefaultMaxInFlight caps requests being served at once; past it, 503.
	// Far above what a small VM serves with low latency, far below what
	// exhausts memory.
	DefaultMaxInFlight = 1024
	// DefaultMaxClientInFlight caps one client's requests being served at
	// once: far above what a browser or a pooled client keeps busy, far
	// below what would let a few clients take every slot.
	DefaultMaxClientInFlight = 64
	// DefaultCredentialFailures is how many failed credential attempts a
	// client address may make in a minute before it gets 429.
	DefaultCredentialFailures = 10
)

// Config is everything the HTTP layer needs; main fills it from flags.
type Config struct {
	Store Store
	// File and Shared are Store again, as what it is beyond Store; at most
	// one is set. File: a file this process owns (bbolt), which backs
	// itself up and reports damage. Shared: a database several instances
	// share (PostgreSQL), where API keys are looked up on every request
	// and the requests of each resource hold a share of its pool.
	// Neither: no backup (the answer says how to back up PostgreSQL),
	// credentials checked in the store's memory.
	File   FileStore
	Shared SharedStore
	// Spec is openapi.yaml, embedded by main.
	Spec   []byte
	Logger *slog.Logger
	// Metrics is the registry GET /metrics serves; the server records its
	// requests there and registers the store and domain gauges on it.
	Metrics *metrics.Registry
	// AccessLog, when set, receives the line each request logs directly,
	// formatted as slog's TextHandler (JSONHandler with AccessLogJSON)
	// would: main gives it the writer and format of Logger's handler. It
	// must be safe for concurrent use. Nil sends the lines through Logger.
	AccessLog     io.Writer
	AccessLogJSON bool
	// Now is the clock for sunset dates; nil means time.Now.
	Now func() time.Time
	// BodyLimit caps request bodies in bytes; 0 means DefaultBodyLimit.
	BodyLimit int64
	// RateLimit is requests per second per client address, with a burst of
	// twice that; 0 turns the limiter off.
	RateLimit float64
	// Domains is the custom-domain manager.
	Domains *domains.Manager
	// MaxInFlight caps requests served at once (503 past it); 0 means
	// DefaultMaxInFlight.
	MaxInFlight int
	// MaxClientInFlight caps the requests of one client served at once
	// (503 past it); 0 means DefaultMaxClientInFlight, negative no cap.
	MaxClientInFlight int
	// CORSOrigins are the origins (scheme://host[:port], or * for any)
	// whose scripts may call the public API; none turns CORS off.
	CORSOrigins []string
	// CredentialFailures is how many failed credential attempts (API key
	// or admin token) a client address may make in a minute before every
	// credential it sends gets 429, whatever RateLimit is; 0 means
	// DefaultCredentialFailures.
	CredentialFailures int
	// Events delivers webhooks and feeds the event streams; nil serves
	// the events as JSON pages only.
	Events *events.Engine
	// WebhookPolicy judges webhook URLs when they are saved.
	WebhookPolicy events.Policy
	// Development is a developer's start (main's development): the
	// project says so, and the dashboard says what is simulated.
	Development bool
	// MaxStreams caps the event streams open at once; 0 means
	// DefaultMaxStreams.
	MaxStreams int
	// MaxStreamsPerClient caps the public event streams of one client
	// address; 0 means DefaultMaxStreamsPerClient. A tenth of MaxStreams
	// is kept for the operator's GET /admin/events.
	MaxStreamsPerClient int
	// Prepared is what Prepare(Spec) returned, for a process that prepared
	// it before its store was open; nil: New prepares it.
	Prepared *Prepared
	// IdempotencyTTL is how long the answer to a create sent with an
	// Idempotency-Key is kept; 0 means DefaultIdempotencyTTL.
	IdempotencyTTL time.Duration
	// IdempotencyMaxKeys bounds the answers kept (SweepIdempotencyKeys
	// forgets the oldest beyond it); 0 means DefaultIdempotencyMaxKeys.
	IdempotencyMaxKeys int
}

// Prepared is the part of a Server that depends on the OpenAPI documents
// only: parsing them and rendering the site are most of New's work, which
// a process waiting for its store (the new process of an upgrade in place,
// until the old one has closed the data file) does beforehand.
type Prepared struct {
	public, admin *apiDoc
	site          *web.Site
}

// Prepare parses both documents and renders the site from spec
// (openapi.yaml).
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
	cfg     Config
	store   Store
	log     *slog.Logger
	access  *accesslog.Logger // nil: access lines go through log
	now     func() time.Time
	echo    *echo.Echo
	public  *apiDoc
	admin   *apiDoc
	site    *web.Site
	domains *domains.Manager
	valOpts openapi3filter.Options
	// metrics counts requests for GET /metrics.
	metrics *metrics.Registry
	// aborted ends when AbortBackups is called: backups in flight stop.
	aborted      context.Context
	abortBackups context.CancelFunc
	// validated holds the routes whose requests the validator checks,
	// credentials included, as routeKey.
	validated map[string]bool
	// failures limits failed credential attempts per client address.
	failures *failureLimiter
	// streams counts the open event streams (events.go); EndStreams ends
	// them all.
	streams    streams
	streamsEnd context.Context
	endStreams context.CancelFunc
	// inFlight caps the requests served at once, in total and per client.
	inFlight *inFlight
	// limiter is the per-client rate limit; nil when it is off.
	limiter    *rateLimiter
	ratePolicy []string
	// keysInFlight are the Idempotency-Keys being served (idempotency.go).
	keysInFlight keysInFlight
	// unknownHosts and refusedByRate summarize 421s and 429s in the log.
	unknownHosts, refusedByRate *accesslog.Summary
}

// EndStreams ends the open event streams (at shutdown: each would hold its
// connection until the shutdown's timeout). Their clients reconnect, to
// another instance or after the restart, from their last event.
func (s *Server) EndStreams() { s.endStreams() }

// New builds the server: parses both OpenAPI documents, registers every
// route, and fails when a route and the spec disagree.
func New(cfg Config) (*Server, error) { return newServer(cfg, true) }

// orDefault gives a Config field that is zero or below its default: in
// these fields, as the zero Config promises, no value means the default.
func orDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// newServer is New; validate false leaves request validation out, which
// only the benchmark of what validation costs asks for (export_test.go).
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
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	orDefault(&cfg.BodyLimit, DefaultBodyLimit)
	orDefault(&cfg.MaxInFlight, DefaultMaxInFlight)
	if cfg.MaxClientInFlight == 0 {
		cfg.MaxClientInFlight = DefaultMaxClientInFlight
	}
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
	prepared := cfg.Prepared
	if prepared == nil {
		var err error
		if prepared, err = Prepare(cfg.Spec); err != nil {
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
		public:  prepared.public,
		admin:   prepared.admin,
		site:    prepared.site,

		validated: map[string]bool{},
		failures:  newFailureLimiter(cfg.CredentialFailures),
	}
	s.metrics = cfg.Metrics
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
		if err := s.metrics.Register(g); err != nil {
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
		// Defaults are applied by the handlers and the store; letting the
		// validator apply them would re-encode every body.
		SkipSettingDefaults: true,
		// Rejecting a body on an operation that takes none catches clients
		// that send data they think is used.
		RejectWhenRequestBodyNotSpecified: true,
	}
	s.valOpts.WithCustomSchemaErrorFunc(schemaReason)

	e := s.echo
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	// The peer address, not X-Forwarded-For: a header any client can set
	// must not choose its own rate-limit bucket.
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
