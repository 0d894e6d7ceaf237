package domains

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/certmagic"
	"golang.org/x/net/idna"

	"petstore/store"
)

// Config configures a Manager.
type Config struct {
	Store    store.Store
	Platform Platform
	// PublicIPs are shown as A/AAAA fallbacks for apex domains.
	PublicIPs []netip.Addr
	Checker   *Checker
	// ACME turns certificates on; nil when this service terminates no TLS
	// (development, or behind a proxy that does).
	ACME   *ACME
	Logger *slog.Logger
	Now    func() time.Time
	// Backoff schedules the background checks of pending domains.
	Backoff Backoff
	// RecheckEvery is how often verified domains are checked again, so that
	// one whose DNS moved away is noticed. Default 6 hours.
	RecheckEvery time.Duration
	// TickEvery is how often the background loop looks for due checks.
	// Default 30 seconds.
	TickEvery time.Duration
}

// ACME configures the certificate authority.
type ACME struct {
	// CA is the ACME directory URL.
	CA    string
	Email string
	// Profile is the ACME profile to ask for; empty lets the CA choose.
	Profile string
	// TrustedRoots are extra roots for the CA's own TLS (test CAs).
	TrustedRoots *x509.CertPool
	// HTTPPort and TLSPort are the ports where this service answers
	// HTTP-01 and TLS-ALPN-01 challenges (80 and 443 in production).
	HTTPPort, TLSPort int
	// DisableHTTPChallenge is set when there is no HTTP listener.
	DisableHTTPChallenge bool
}

// Manager owns the custom domains: adding, checking, certificates,
// redirects, removal, and the routing decision for every request's Host.
type Manager struct {
	cfg   Config
	db    store.Store
	log   *slog.Logger
	now   func() time.Time
	table atomic.Pointer[routingTable]

	// Certificates; all nil without ACME.
	certs  *certmagic.Config
	cache  *certmagic.Cache
	issuer *certmagic.ACMEIssuer

	ctx       context.Context // ends at Close; background issuance runs under it
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	mu        sync.Mutex
	obtaining map[string]*obtainRun
}

type obtainRun struct{ cancel context.CancelFunc }

// NewManager builds a manager and its routing table from the store.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Store == nil || cfg.Checker == nil {
		return nil, errors.New("domains: Config.Store and Config.Checker are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RecheckEvery <= 0 {
		cfg.RecheckEvery = 6 * time.Hour
	}
	if cfg.TickEvery <= 0 {
		cfg.TickEvery = 30 * time.Second
	}
	m := &Manager{cfg: cfg, db: cfg.Store, log: cfg.Logger, now: cfg.Now, obtaining: map[string]*obtainRun{}}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	if cfg.ACME != nil {
		m.setUpCertificates(cfg.ACME)
	}
	if err := m.Refresh(context.Background()); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Manager) setUpCertificates(a *ACME) {
	zl := zapToSlog(m.log)
	m.cache = certmagic.NewCache(certmagic.CacheOptions{
		GetConfigForCert: func(certmagic.Certificate) (*certmagic.Config, error) { return m.certs, nil },
		Logger:           zl,
	})
	m.certs = certmagic.New(m.cache, certmagic.Config{
		Storage: CertStorage(m.db),
		// On-demand issuance serves names nobody obtained ahead of time (the
		// default address); the decision function denies everything else.
		OnDemand: &certmagic.OnDemandConfig{DecisionFunc: m.decide},
		OnEvent:  m.onEvent,
		Logger:   zl,
	})
	m.issuer = certmagic.NewACMEIssuer(m.certs, certmagic.ACMEIssuer{
		CA:                   a.CA,
		TestCA:               a.CA,
		Email:                a.Email,
		Agreed:               true,
		TrustedRoots:         a.TrustedRoots,
		AltHTTPPort:          a.HTTPPort,
		AltTLSALPNPort:       a.TLSPort,
		DisableHTTPChallenge: a.DisableHTTPChallenge,
		Profile:              a.Profile,
		Logger:               zl,
	})
	m.certs.Issuers = []certmagic.Issuer{m.issuer}
}

// Close stops background work: issuance attempts and certificate upkeep.
func (m *Manager) Close() {
	m.cancel()
	m.wg.Wait()
	if m.cache != nil {
		m.cache.Stop()
	}
}

// DefaultAddress is where the project is served without a custom domain:
// <slug>.<platform domain>, or localhost in development.
func (m *Manager) DefaultAddress(p store.Project) string {
	if m.cfg.Platform.Domain == "" {
		return "localhost"
	}
	return p.Slug + "." + m.cfg.Platform.Domain
}

// Add attaches a domain after the plan and deploy checks, normalising the
// name and refusing what cannot be attached. The answer holds the DNS
// records to create.
func (m *Manager) Add(ctx context.Context, input string) (store.Domain, error) {
	p, err := m.db.Project(ctx)
	if err != nil {
		return store.Domain{}, err
	}
	if p.Plan != store.PlanPro && p.Plan != store.PlanEnterprise {
		return store.Domain{}, store.Errorf(store.EPLANREQUIRED, "custom domains need plan pro or above; this project is on %s", p.Plan)
	}
	if !hasSuccessfulDeploy(p) {
		return store.Domain{}, store.Errorf(store.ECONFLICT, "the project has no successful deploy yet; deploy it before adding a domain")
	}
	name, err := m.cfg.Platform.Normalize(input)
	if err != nil {
		return store.Domain{}, err
	}
	now := m.now().UTC()
	d := store.Domain{
		Name:        name,
		Apex:        IsApex(name),
		State:       store.DomainPending,
		AddedAt:     now,
		Records:     RequiredRecords(name, m.cfg.Platform.CNAMETarget, m.cfg.PublicIPs),
		Certificate: store.Certificate{State: store.CertNone},
	}
	if u, err := idna.ToUnicode(name); err == nil && u != name {
		d.DisplayName = u
	}
	if next, ok := m.cfg.Backoff.NextCheck(now, now, 0); ok {
		d.NextCheckAt = &next
	}
	if err := m.db.AddDomain(ctx, &d); err != nil {
		return store.Domain{}, err
	}
	return d, nil
}

func hasSuccessfulDeploy(p store.Project) bool {
	for _, d := range p.Deploys {
		if d.Status == "succeeded" {
			return true
		}
	}
	return false
}

// Get returns one attached domain.
func (m *Manager) Get(ctx context.Context, name string) (store.Domain, error) {
	return m.db.Domain(ctx, lookupName(name))
}

// List returns every attached domain, oldest first.
func (m *Manager) List(ctx context.Context) ([]store.Domain, error) {
	return m.db.Domains(ctx)
}

// lookupName lets a client name a domain the way it typed it: case and a
// trailing dot do not matter, and an IDN may be given in Unicode.
func lookupName(name string) string {
	name = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), ".")
	if a, err := idna.Lookup.ToASCII(name); err == nil {
		return a
	}
	return name
}

// Verify checks the domain's DNS now. On success the certificate is
// requested at once, in the background; the domain's certificate state
// shows its progress. Calling it on a verified domain is Re-verify: a new
// certificate attempt starts when there is no certificate yet.
func (m *Manager) Verify(ctx context.Context, name string) (store.Domain, error) {
	name = lookupName(name)
	if _, err := m.db.Domain(ctx, name); err != nil {
		return store.Domain{}, err
	}
	res := m.cfg.Checker.Check(ctx, name)
	return m.apply(ctx, name, res, true)
}

// apply records a check's result: the state moves, the next background
// check is scheduled, and a verified domain without a certificate gets one.
func (m *Manager) apply(ctx context.Context, name string, res store.DomainCheck, manual bool) (store.Domain, error) {
	now := m.now().UTC()
	wantCert := false
	d, err := m.db.UpdateDomain(ctx, name, func(d *store.Domain) error {
		d.Check = &res
		wantCert = false
		switch {
		case res.Verified:
			if d.State != store.DomainVerified {
				d.State = store.DomainVerified
				d.VerifiedAt = &now
			}
			d.CheckAttempts = 0
			next := now.Add(m.cfg.RecheckEvery)
			d.NextCheckAt = &next
			if m.certs != nil && d.Certificate.State != store.CertIssued {
				wantCert = true
				d.Certificate = store.Certificate{State: store.CertPending, UpdatedAt: &now}
			}
		case d.State == store.DomainVerified || d.State == store.DomainMoved:
			// It pointed here once: flag it, keep serving its certificate
			// until the DNS comes back, and keep looking.
			d.State = store.DomainMoved
			next := now.Add(m.cfg.RecheckEvery)
			d.NextCheckAt = &next
		case !manual:
			d.CheckAttempts++
			d.NextCheckAt = nil
			if next, ok := m.cfg.Backoff.NextCheck(d.AddedAt, now, d.CheckAttempts); ok {
				d.NextCheckAt = &next
			}
		}
		return nil
	})
	if err != nil {
		return store.Domain{}, err
	}
	if err := m.Refresh(ctx); err != nil {
		return store.Domain{}, err
	}
	if wantCert {
		m.obtain(name)
	}
	return d, nil
}

// Remove detaches a domain. Once it returns the domain gets no response:
// the routing table and the decision function no longer know it, its
// certificate is out of the memory cache and the storage, so the next
// handshake fails.
func (m *Manager) Remove(ctx context.Context, name string) error {
	name = lookupName(name)
	if err := m.db.RemoveDomain(ctx, name); err != nil {
		return err
	}
	m.stopObtaining(name)
	// The table first: from here on the decision function refuses the
	// name, so no handshake can load the certificate back.
	if err := m.Refresh(ctx); err != nil {
		return err
	}
	if m.certs == nil {
		return nil
	}
	m.cache.RemoveManaged([]certmagic.SubjectIssuer{{Subject: name}})
	prefix := certmagic.StorageKeys.CertsSitePrefix(m.issuer.IssuerKey(), name)
	if err := m.certs.Storage.Delete(ctx, prefix); err != nil && !errors.Is(err, errNotExist) {
		return fmt.Errorf("deleting the certificate of %s: %w", name, err)
	}
	return nil
}

// Settings returns the domain settings.
func (m *Manager) Settings(ctx context.Context) (store.Settings, error) {
	return m.db.Settings(ctx)
}

// SaveSettings validates and saves the settings: redirects between
// attached domains (to the default address too), chains flattened to one
// hop, loops refused. The answer is what was saved.
func (m *Manager) SaveSettings(ctx context.Context, in store.Settings) (store.Settings, error) {
	p, err := m.db.Project(ctx)
	if err != nil {
		return store.Settings{}, err
	}
	def := m.DefaultAddress(p)
	s, err := m.db.UpdateSettings(ctx, func(s *store.Settings, attached map[string]store.Domain) error {
		redirects, err := flattenRedirects(in.Domains.Redirects, attached, def)
		if err != nil {
			return err
		}
		primary, err := checkPrimary(in.Domains.Primary, attached, def, redirects)
		if err != nil {
			return err
		}
		s.Domains = store.DomainSettings{Primary: primary, Redirects: redirects}
		return nil
	})
	if err != nil {
		return store.Settings{}, err
	}
	return s, m.Refresh(ctx)
}

// Troubleshooting lists what to do when a verified domain still has no
// certificate 30 minutes after verification; nil otherwise.
func (m *Manager) Troubleshooting(d store.Domain) []string {
	if d.State != store.DomainVerified || d.VerifiedAt == nil || d.Certificate.State == store.CertIssued ||
		m.now().Sub(*d.VerifiedAt) < 30*time.Minute {
		return nil
	}
	caa := "the certificate authority"
	if ids := m.cfg.Checker.CAAIdentities; len(ids) > 0 {
		caa = strings.Join(ids, ", ")
	}
	steps := []string{
		"Confirm the domain still verifies: choose Re-verify and check that it reports no findings.",
		fmt.Sprintf("Check that CAA records on %s or its parent domains allow %s; a CAA record that names only another CA blocks the certificate.", d.Name, caa),
		"Choose Re-verify to trigger a new certificate attempt.",
	}
	if d.Certificate.Error != "" {
		steps = append(steps, "The last attempt failed with: "+d.Certificate.Error)
	}
	return steps
}

// TLSConfig is the configuration of the HTTPS listener: certificates from
// the cache, loaded or obtained on demand for allowed names only, and
// TLS-ALPN-01 challenges answered in the handshake.
func (m *Manager) TLSConfig() *tls.Config {
	if m.certs == nil {
		return nil
	}
	tc := m.certs.TLSConfig()
	tc.NextProtos = append(tc.NextProtos, "h2", "http/1.1")
	tc.MinVersion = tls.VersionTLS12
	return tc
}

// HTTPChallengeHandler answers ACME HTTP-01 challenges and passes every
// other request to next.
func (m *Manager) HTTPChallengeHandler(next http.Handler) http.Handler {
	if m.issuer == nil {
		return next
	}
	return m.issuer.HTTPChallengeHandler(next)
}

// CertificatesEnabled reports whether this manager obtains certificates.
func (m *Manager) CertificatesEnabled() bool { return m.certs != nil }

// errNotExist is what storage returns for a missing key.
var errNotExist = fsErrNotExist
