// Package domains owns customers' custom domains: adding and removing
// them, keeping their records in the store, checking them again when
// Backoff says so, and deciding what every request's Host gets. DNS
// checking is package dnscheck's, certificates package certs'; the
// HTTP API over it is package handlers'.
package domains

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/idna"

	"petstore/domains/certs"
	"petstore/domains/dnscheck"
	"petstore/store"
)

// Config configures a Manager.
type Config struct {
	Store Store
	// Platform is the platform's domain, the CNAME target customers point
	// at and its public addresses: given once here, the Checker checks
	// against the same value.
	Platform dnscheck.Platform
	// Checker checks domains' DNS. Its Platform must be left empty: the
	// manager gives it Platform.
	Checker *dnscheck.Checker
	// ACME turns certificates on; nil when this service terminates no TLS
	// (development, or behind a proxy that does).
	ACME *ACME
	// OnCertificateChange, when set, is called after every change of a
	// domain's certificate state; see certs.Change.
	OnCertificateChange func(context.Context, certs.Change)
	Logger              *slog.Logger
	Now                 func() time.Time
	// Backoff schedules the background checks of pending domains.
	Backoff Backoff
	// RecheckEvery is how often verified domains are checked again, so that
	// one whose DNS moved away is noticed. Default 6 hours.
	RecheckEvery time.Duration
	// ConfirmEvery is how often a domain is checked while its DNS points
	// elsewhere: a verified one until it is moved or points here again, a
	// moved one until it comes back. Default 30 minutes.
	ConfirmEvery time.Duration
	// TickEvery is how often the background loops look for due work.
	// Default 30 seconds.
	TickEvery time.Duration
	// AllowTestTLDs lets names under .test (RFC 6761) be added. Every other
	// special-use or non-ICANN top-level domain is always refused: no CA
	// issues for them. Tests and staging, with their own DNS and CA, turn
	// it on.
	AllowTestTLDs bool
	// ACMEDNSZone is the zone this service answers ACME DNS-01 challenges
	// in (--acme-dns-zone, no trailing dot); empty turns off moving live
	// domains without downtime (ownership.go).
	ACMEDNSZone string
	// OwnedCheckEvery is how often an owned domain is checked for its
	// switch. Default 5 minutes.
	OwnedCheckEvery time.Duration
}

// ACME configures the certificate authority.
type ACME = certs.ACME

// DefaultCA is the ACME directory certificates come from unless the
// operator names others (--acme-ca).
const DefaultCA = certs.DefaultCA

// Store is what the manager needs of the store: the project, the domains
// and their settings, change notices from other instances, and what the
// certificates need.
type Store interface {
	certs.Store
	Project(ctx context.Context) (store.Project, error)
	UpdateProject(ctx context.Context, fn func(*store.Project) error) (store.Project, error)
	AddDomain(ctx context.Context, d *store.Domain, key *store.IdempotentWrite) error
	DomainsPage(ctx context.Context, limit int, after *store.DomainCursor) ([]store.Domain, *store.DomainCursor, error)
	RemoveDomain(ctx context.Context, name string) error
	Settings(ctx context.Context) (store.Settings, error)
	UpdateSettings(ctx context.Context, fn func(*store.Settings, map[string]store.Domain) error) (store.Settings, error)
	OnChange(fn func())
}

// Manager owns the custom domains: adding, checking, redirects, removal,
// and the routing decision for every request's Host. Certificates are its
// certs' (nil without ACME).
type Manager struct {
	cfg     Config
	db      Store
	log     *slog.Logger
	now     func() time.Time
	checker *dnscheck.Checker
	certs   *certs.Certs
	table   atomic.Pointer[routingTable]
	// refreshMu keeps one routing-table rebuild at a time (routing.go).
	refreshMu sync.Mutex
	// storeChanged wakes syncWithStore (instances.go).
	storeChanged chan struct{}

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewManager builds a manager and its routing table from the store.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Store == nil || cfg.Checker == nil {
		return nil, errors.New("domains: Config.Store and Config.Checker are required")
	}
	if !reflect.DeepEqual(cfg.Checker.Platform, dnscheck.Platform{}) {
		return nil, errors.New("domains: give the platform once, in Config.Platform, not in Config.Checker")
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.RecheckEvery = orDefault(cfg.RecheckEvery, 6*time.Hour)
	cfg.TickEvery = orDefault(cfg.TickEvery, 30*time.Second)
	cfg.ConfirmEvery = orDefault(cfg.ConfirmEvery, 30*time.Minute)
	cfg.OwnedCheckEvery = orDefault(cfg.OwnedCheckEvery, 5*time.Minute)
	cfg.ACMEDNSZone = dnscheck.Canonical(cfg.ACMEDNSZone)
	m := &Manager{cfg: cfg, db: cfg.Store, log: cfg.Logger, now: cfg.Now}
	m.table.Store(&routingTable{})
	m.ctx, m.cancel = context.WithCancel(context.Background())
	// The Checker given is copied, not changed.
	checker := *cfg.Checker
	checker.Platform = cfg.Platform
	if cfg.ACME != nil {
		cc := certs.Config{
			Store: cfg.Store, ACME: *cfg.ACME, Names: func(name string) certs.Name { return m.table.Load().certName(name) }, OnChange: cfg.OnCertificateChange,
			Logger: cfg.Logger, Now: cfg.Now, TickEvery: cfg.TickEvery,
		}
		if solver := m.dnsSolver(); solver != nil {
			cc.DNS01Solver = solver
		}
		m.certs = certs.New(cc)
		// The checker judges CAA records for the CAs certificates come
		// from, unless told otherwise.
		if checker.CertificateAuthorities == nil {
			checker.CertificateAuthorities = m.certs.Authorities()
			if checker.ValidationMethods == nil {
				checker.ValidationMethods = m.certs.ValidationMethods()
			}
		}
	}
	m.checker = &checker
	// The first refresh also brings back the certificates of moved
	// domains, before the listeners open: the decision function refuses
	// moved names, so a handshake could not load them later. On failure,
	// Close stops what certs.New started.
	if err := m.Refresh(context.Background()); err != nil {
		if store.ErrorCode(err) != store.EUNAVAILABLE {
			m.Close()
			return nil, err
		}
		// A database not reached yet: the store tells followStore's
		// listener once it is, and the refresh runs then.
		m.log.Warn("custom domains: the store is unavailable; loading them once it is back", "err", err)
		m.table.Store(&routingTable{defaultAddr: m.DefaultAddress(store.Project{})})
	}
	m.followStore()
	return m, nil
}

// Close stops background work: the checks, issuance attempts and
// certificate upkeep.
func (m *Manager) Close() {
	m.cancel()
	m.wg.Wait()
	if m.certs != nil {
		m.certs.Close()
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
// records to create. With key (nil: none) the store keeps the domain as
// the key's answer in the same write.
func (m *Manager) Add(ctx context.Context, input string, key *store.IdempotentWrite) (store.Domain, error) {
	p, err := m.db.Project(ctx)
	if err != nil {
		return store.Domain{}, err
	}
	if !store.PlanHasCustomDomains(p.Plan) {
		return store.Domain{}, store.Errorf(store.EPLANREQUIRED, "custom domains need plan pro or above; this project is on %s", p.Plan)
	}
	if !slices.ContainsFunc(p.Deploys, func(d store.Deploy) bool { return d.Status == store.DeploySucceeded }) {
		return store.Domain{}, store.Errorf(store.ECONFLICT, "the project has no successful deploy yet; deploy it before adding a domain")
	}
	if m.CNAMETarget() == "" {
		return store.Domain{}, store.Errorf(store.ENOCNAMETARGET,
			"this service knows no CNAME target for customers' DNS records; start it with --domain (the target is then cname.<domain>) or --cname-target")
	}
	name, err := m.normalize(input)
	if err != nil {
		return store.Domain{}, err
	}
	if err := dnscheck.CheckPublicTLD(name, m.cfg.AllowTestTLDs); err != nil {
		return store.Domain{}, err
	}
	now := m.now().UTC()
	d := store.Domain{
		Name:        name,
		Apex:        dnscheck.IsApex(name),
		State:       store.DomainPending,
		AddedAt:     now,
		Certificate: store.Certificate{State: store.CertNone},
		Delegation:  m.delegationFor(ctx, name),
	}
	d.Records = m.records(&d)
	if u, err := idna.ToUnicode(name); err == nil && u != name {
		d.DisplayName = u
	}
	if next, ok := m.cfg.Backoff.NextCheck(now, now, 0); ok {
		d.NextCheckAt = &next
	}
	if err := m.db.AddDomain(ctx, &d, key); err != nil {
		return store.Domain{}, err
	}
	return d, nil
}

// Get returns one attached domain.
func (m *Manager) Get(ctx context.Context, name string) (store.Domain, error) {
	d, err := m.db.Domain(ctx, lookupName(name))
	return shown(d, m.now()), err
}

// List returns every attached domain, oldest first.
func (m *Manager) List(ctx context.Context) ([]store.Domain, error) {
	ds, err := m.db.Domains(ctx)
	for i := range ds {
		ds[i] = shown(ds[i], m.now())
	}
	return ds, err
}

// Page returns one page of the attached domains, in the order of List, and
// the cursor of the next page (nil on the last); see store.DomainsPage.
func (m *Manager) Page(ctx context.Context, limit int, after *store.DomainCursor) ([]store.Domain, *store.DomainCursor, error) {
	ds, next, err := m.db.DomainsPage(ctx, limit, after)
	for i := range ds {
		ds[i] = shown(ds[i], m.now())
	}
	return ds, next, err
}

// shown is a domain as answered: the certificate's failed validations of
// the last hour only. Reads are pure: the certificate state is as certs
// stored it.
func shown(d store.Domain, now time.Time) store.Domain {
	d.Certificate.FailedValidations = certs.RecentFailures(d.Certificate.FailedValidations, now)
	return d
}

// lookupName lets a client name a domain the way it typed it: case and a
// trailing dot do not matter, and an IDN may be given in Unicode.
func lookupName(name string) string {
	name = dnscheck.Canonical(name)
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
	d, err := m.db.Domain(ctx, name)
	if err != nil {
		return store.Domain{}, err
	}
	res, own := m.check(ctx, d)
	return m.apply(ctx, name, res, own, true)
}

// apply records a check's result: the state moves, the next background
// check is scheduled, and a verified domain without a certificate gets one.
// A domain that pointed here once (verified or moved) follows the rule in
// judgeLive: lookups that fail change nothing.
func (m *Manager) apply(ctx context.Context, name string, res store.DomainCheck, own *dnscheck.Ownership, manual bool) (store.Domain, error) {
	now := m.now().UTC()
	var wantCert bool
	d, err := m.db.UpdateDomain(ctx, name, func(d *store.Domain) error {
		d.Check = &res
		wantCert = false
		if res.ZoneApex && !d.Apex {
			d.Apex = true
			d.Records = m.records(d)
		}
		live := d.State == store.DomainVerified || d.State == store.DomainMoved
		owned := m.applyOwnership(d, own, now)
		switch {
		case live:
			wantCert = judgeLive(&m.cfg, d, res, now)
		case res.Verified:
			d.State = store.DomainVerified
			d.VerifiedAt = &now
			d.CheckAttempts = 0
			d.NextCheckAt = new(now.Add(m.cfg.RecheckEvery))
			wantCert = certs.Wants(d.Certificate)
		case owned:
			wantCert = m.wantsCertificateAhead(d)
		case !manual:
			d.CheckAttempts++
			d.NextCheckAt = nil
			if next, ok := m.cfg.Backoff.NextCheck(d.AddedAt, now, d.CheckAttempts); ok {
				d.NextCheckAt = &next
			}
		}
		wantCert = wantCert && !wildcardCertificateBlocked(d)
		return nil
	})
	if err != nil {
		return store.Domain{}, err
	}
	// Refresh keeps a moved domain's certificate, or manages again the one
	// of a domain that came back.
	if err := m.Refresh(ctx); err != nil {
		return store.Domain{}, err
	}
	if m.certs == nil {
		return shown(d, now), nil
	}
	if d.State == store.DomainMoved {
		m.certs.DropKept(name, true)
	}
	if wantCert {
		// Pending unless failed attempts are backing off; the record keeps
		// its failures and events, which the back-off and the CA's hourly
		// limit count on.
		if c := m.certs.Request(ctx, name); c.State != "" {
			d.Certificate = c
		}
	}
	return shown(d, now), nil
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
	// Refresh takes its certificate out of the memory cache, after the
	// table: from then on the decision function refuses the name, so no
	// handshake can load the certificate back.
	if err := m.Refresh(ctx); err != nil {
		return err
	}
	if m.certs == nil {
		return nil
	}
	return m.certs.Forget(ctx, name)
}

// UpdateProject changes the project: its slug names the default address,
// which routing follows before this returns, so project changes go
// through here.
func (m *Manager) UpdateProject(ctx context.Context, change func(*store.Project) error) (store.Project, error) {
	p, err := m.db.UpdateProject(ctx, change)
	if err != nil {
		return store.Project{}, err
	}
	return p, m.Refresh(ctx)
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
	if d.State != store.DomainVerified || d.VerifiedAt == nil || d.Certificate.State == store.CertIssued || d.Certificate.State == store.CertRenewing ||
		m.now().Sub(*d.VerifiedAt) < 30*time.Minute {
		return nil
	}
	steps := []string{
		"Confirm the domain still verifies: choose Re-verify and check that it reports no findings.",
		fmt.Sprintf("Check that CAA records on %s or its parent domains allow %s; a CAA record that names only another CA blocks the certificate.", d.Name, issuerNames(m.ctx, m.checker)),
	}
	if d.Certificate.Error != "" {
		steps = append(steps, "The last attempt failed with: "+d.Certificate.Error)
	}
	// While failed attempts back off, Re-verify starts nothing: saying it
	// does would send the customer clicking.
	if c := d.Certificate; c.NextAttemptAt != nil && m.now().Before(*c.NextAttemptAt) {
		steps = append(steps, fmt.Sprintf("The next attempt starts by itself at %s UTC (Re-verify does not bring it forward): %s.",
			c.NextAttemptAt.UTC().Format("2006-01-02 15:04"), c.NextAttemptReason))
	} else {
		steps = append(steps, "Choose Re-verify to start a new certificate attempt.")
	}
	return steps
}

// DevelopmentTarget is the placeholder CNAME target of development mode
// (a `go run .` on loopback, without --domain or --cname-target): domains
// can be added and their records shown, naming a host no customer's DNS
// can point at.
const DevelopmentTarget = "localhost"

// CNAMETarget is where customers point their domains; "" when the service
// was started without --domain or --cname-target, and then no domain can
// be added.
func (m *Manager) CNAMETarget() string { return dnscheck.Canonical(m.cfg.Platform.CNAMETarget) }

// issuerNames names the issuer domains a CAA record must name, as the
// CAA check takes them: from --acme-caa-identity, else from each CA's
// directory (meta.caaIdentities). Checks have usually read the directory
// already; the timeout bounds the fetch when they have not, since the
// answer to an API call waits for it.
func issuerNames(ctx context.Context, checker *dnscheck.Checker) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ids := checker.IssuerNames(ctx)
	if len(ids) == 0 {
		return "the certificate authority"
	}
	return strings.Join(ids, " or ")
}
