// Package certs obtains, renews and serves custom domains' certificates
// through certmagic, and is the one writer of their certificate state.
package certs

import (
	"cmp"
	"context"
	"crypto/x509"
	"log/slog"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3"

	"petstore/store"
)

// DefaultCA is the ACME directory certificates come from unless the
// operator names others (--acme-ca).
const DefaultCA = "https://acme-v02.api.letsencrypt.org/directory"

// ACME configures the certificate authority.
type ACME struct {
	// CA is the ACME directory URL.
	CA string
	// FallbackCAs are more directory URLs, tried in order when the ones
	// before fail.
	FallbackCAs []string
	Email       string
	// Profile is the ACME profile to ask for; empty lets the CA choose.
	Profile string
	// TrustedRoots are extra roots for the CA's own TLS (test CAs).
	TrustedRoots *x509.CertPool
	// HTTPPort and TLSPort are where HTTP-01 and TLS-ALPN-01 challenges are
	// answered.
	HTTPPort, TLSPort int
	// DisableHTTPChallenge is set when there is no HTTP listener.
	DisableHTTPChallenge bool
	// RenewInterval is how often maintenance looks for certificates to
	// renew; not positive, certmagic's default.
	RenewInterval time.Duration
}

// Store is what certificates need of the store: the domains' records and
// the key/value space of certmagic's files and locks.
type Store interface {
	store.KeyValue
	Domain(ctx context.Context, name string) (store.Domain, error)
	Domains(ctx context.Context) ([]store.Domain, error)
	UpdateDomain(ctx context.Context, name string, fn func(*store.Domain) error) (store.Domain, error)
}

// Name is what the routing table says of a name, for certificates.
type Name struct {
	// Served: verified, or moved and still holding a certificate.
	Served bool
	// Allowed: a certificate may be obtained and managed for it.
	Allowed bool
	// Issued: a handshake may load its certificate from storage.
	Issued bool
	// Default: the default address, its certificate obtained on demand.
	Default bool
	// Cover is the served wildcard covering the name one label below its
	// base, or "": a name not served on its own is served with its
	// certificate.
	Cover string
	// Owned: traffic still goes elsewhere; the certificate may be obtained
	// ahead of it, and no handshake gets it yet.
	Owned bool
	// Delegated: its _acme-challenge CNAME points into the service's ACME DNS
	// zone, so its certificates go through DNS-01.
	Delegated bool
}

// Config configures Certs.
type Config struct {
	Store Store
	ACME  ACME
	// Names looks a name up in the routing table. Handshakes call it, so it
	// must answer from memory.
	Names func(name string) Name
	// OnChange, when set, is called after every committed change of a
	// domain's certificate state.
	OnChange func(context.Context, Change)
	Logger   *slog.Logger
	Now      func() time.Time
	// TickEvery is how often the certificate loop looks for due work.
	TickEvery time.Duration
	// DNS01Solver, when set, answers delegated names' DNS-01 challenges.
	DNS01Solver acmez.Solver
}

// Certs obtains, renews and serves custom domains' certificates.
type Certs struct {
	cfg   Config
	db    Store
	log   *slog.Logger
	now   func() time.Time
	names func(string) Name

	// certs manages attached domains' certificates, renewed without
	// visitors; onDemand serves the default address from a handshake;
	// obtainer makes the first, single attempts that attempts.go schedules.
	certs, onDemand, obtainer *certmagic.Config
	// dnsCerts and dnsObtainer are certs and obtainer for delegated names
	// (nil without Config.DNS01Solver).
	dnsCerts, dnsObtainer *certmagic.Config
	cache                 *certmagic.Cache
	storage               certmagic.Storage
	issuers               []*certmagic.ACMEIssuer
	// challengeTypes is how many validations one order may fail: acmez
	// tries the next type after a failure.
	challengeTypes int

	ctx    context.Context // ends at Close; background issuance runs under it
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// tend wakes the loop before its tick (the expiry timer).
	tend chan struct{}

	mu          sync.Mutex
	obtaining   map[string]*obtainRun
	expiryTimer *time.Timer
	expiresAt   time.Time // when expiryTimer fires, on the wall clock
	// presented counts, per name being attempted, the challenges presented to
	// the CA.
	presented map[string]int
}

// New sets certmagic up and starts the certificate loop; Close stops it.
func New(cfg Config) *Certs {
	c := &Certs{
		cfg: cfg, db: cfg.Store, log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)), now: cfg.Now, names: cfg.Names,
		obtaining: map[string]*obtainRun{}, presented: map[string]int{}, tend: make(chan struct{}, 1),
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.cfg.TickEvery = cmp.Or(c.cfg.TickEvery, 30*time.Second)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.expiryTimer = time.AfterFunc(time.Hour, c.wake)
	c.expiryTimer.Stop() // wakeAt sets it
	c.setUp(cfg.ACME)
	c.wg.Add(1)
	go c.loop()
	return c
}

// Close stops issuance attempts and certificate upkeep.
func (c *Certs) Close() {
	c.cancel()
	c.wg.Wait()
	c.mu.Lock()
	c.expiryTimer.Stop()
	c.mu.Unlock()
	c.cache.Stop()
}

// loop runs Tend until Close: on a tick, and when the expiry timer fires.
func (c *Certs) loop() {
	defer c.wg.Done()
	tick := time.NewTicker(c.cfg.TickEvery)
	defer tick.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-tick.C:
		case <-c.tend:
		}
		c.Tend(c.ctx)
	}
}
