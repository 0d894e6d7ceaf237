// Package domains owns customers' custom domains: their records, their
// periodic checks, and what every request's Host gets (DNS checks are
// dnscheck's, certificates certs', the HTTP API handlers').
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

	"petstore/domains/acmedns"
	"petstore/domains/certs"
	"petstore/domains/dnscheck"
	"petstore/store"
)

// Config configures a Manager.
type Config struct {
	Store Store
	// Platform is the platform's domain, CNAME target and public addresses;
	// the Checker checks against the same value.
	Platform dnscheck.Platform
	// Checker checks domains' DNS; its Platform must be left empty.
	Checker *dnscheck.Checker
	// ACME turns certificates on; nil when this service terminates no TLS.
	ACME *ACME
	// OnCertificateChange, when set, is called after every change of a
	// domain's certificate state.
	OnCertificateChange func(context.Context, certs.Change)
	Logger              *slog.Logger
	Now                 func() time.Time
	// Backoff schedules the background checks of pending domains.
	Backoff Backoff
	// RecheckEvery is how often verified domains are checked again, so that
	// one whose DNS moved away is noticed.
	RecheckEvery time.Duration
	// ConfirmEvery is how often a domain whose DNS points elsewhere is
	// checked: a verified one until it is moved, a moved one until it is back.
	ConfirmEvery time.Duration
	// TickEvery is how often the background loops look for due work.
	TickEvery time.Duration
	// AllowTestTLDs lets names under .test (RFC 6761) be added, for tests and
	// staging with their own DNS and CA; other special-use TLDs are always
	// refused since no CA issues for them.
	AllowTestTLDs bool
	// ACMEDNSZone is the zone of --acme-dns-zone (no trailing dot); empty
	// turns off moving live domains without downtime (ownership.go).
	ACMEDNSZone string
	// OwnedCheckEvery is how often an owned domain is checked for its switch.
	OwnedCheckEvery time.Duration
}

// ACME configures the certificate authority.
type ACME = certs.ACME

// DefaultCA is the ACME directory certificates come from unless the
// operator names others (--acme-ca).
const DefaultCA = certs.DefaultCA

// Store is what the manager needs of the store.
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

// Manager owns the custom domains and the routing decision for every
// request's Host. Its certs is nil without ACME.
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
	checker := *cfg.Checker
	checker.Platform = cfg.Platform
	if cfg.ACME != nil {
		cc := certs.Config{
			Store: cfg.Store, ACME: *cfg.ACME, Names: func(name string) certs.Name { return m.table.Load().certName(name) }, OnChange: cfg.OnCertificateChange,
			Logger: cfg.Logger, Now: cfg.Now, TickEvery: cfg.TickEvery,
		}
		if cfg.ACMEDNSZone != "" {
			// Delegated names' DNS-01 challenges.
			cc.DNS01Solver = &acmedns.Solver{Store: m.db, Label: m.challengeLabel}
		}
		m.certs = certs.New(cc)
		// CAA records are judged for the CAs certificates come from, unless the
		// checker was told otherwise.
		if checker.CertificateAuthorities == nil {
			checker.CertificateAuthorities = m.certs.Authorities()
			if checker.ValidationMethods == nil {
				checker.ValidationMethods = m.certs.ValidationMethods()
			}
		}
	}
	m.checker = &checker
	// The first refresh brings back moved domains' certificates before the
	// listeners open: the decision function refuses moved names, so a
	// handshake could not load them later.
	if err := m.Refresh(context.Background()); err != nil {
		if store.ErrorCode(err) != store.EUNAVAILABLE {
			m.Close()
			return nil, err
		}
		// The store tells followStore's listener once it is reached.
		m.log.Warn("custom domains: the store is unavailable; loading them once it is back", "err", err)
		m.table.Store(&routingTable{defaultAddr: m.DefaultAddress(store.Project{})})
	}
	m.followStore()
	return m, nil
}

// Close stops the checks, issuance attempts and certificate upkeep.
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

// Add attaches a domain after the plan and deploy checks; the answer holds
// the DNS records to create. With key (nil: none) the store keeps the
// domain as the key's answer in the same write.
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
// the last hour only.
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

// Verify checks the domain's DNS now, requesting the certificate in the
// background on success; on a verified domain it is Re-verify.
func (m *Manager) Verify(ctx context.Context, name string) (store.Domain, error) {
	name = lookupName(name)
	d, err := m.db.Domain(ctx, name)
	if err != nil {
		return store.Domain{}, err
	}
	res, own := m.check(ctx, d)
	return m.apply(ctx, name, res, own, true)
}

// apply records a check's result: state, next check, and a certificate
// for a verified domain without one. Live domains follow judgeLive.
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
			// Its certificate ahead of its traffic, through DNS-01.
			wantCert = m.certs != nil && m.cfg.ACMEDNSZone != "" && d.Delegation.Delegated && certs.Wants(d.Certificate)
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
		// Pending unless failed attempts are backing off; the record keeps its
		// failures, which the back-off and the CA's hourly limit count on.
		if c := m.certs.Request(ctx, name); c.State != "" {
			d.Certificate = c
		}
	}
	return shown(d, now), nil
}

// Remove detaches a domain. Once it returns the domain gets no response,
// and its certificate is gone from memory and storage.
func (m *Manager) Remove(ctx context.Context, name string) error {
	name = lookupName(name)
	if err := m.db.RemoveDomain(ctx, name); err != nil {
		return err
	}
	// The certificate leaves the memory cache after the table: from then on
	// the decision function refuses the name, so no handshake loads it back.
	if err := m.Refresh(ctx); err != nil {
		return err
	}
	if m.certs == nil {
		return nil
	}
	return m.certs.Forget(ctx, name)
}

// UpdateProject changes the project; routing follows a new slug before
// this returns.
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

// SaveSettings validates and saves the settings: redirects flattened to
// one hop, loops refused. The answer is what was saved.
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
	// The timeout bounds a directory fetch, which the API answer waits for.
	ctx, cancel := context.WithTimeout(m.ctx, 2*time.Second)
	defer cancel()
	issuers := "the certificate authority"
	if ids := m.checker.IssuerNames(ctx); len(ids) > 0 {
		issuers = strings.Join(ids, " or ")
	}
	steps := []string{
		"Confirm the domain still verifies: choose Re-verify and check that it reports no findings.",
		fmt.Sprintf("Check that CAA records on %s or its parent domains allow %s; a CAA record that names only another CA blocks the certificate.", d.Name, issuers),
	}
	if d.Certificate.Error != "" {
		steps = append(steps, "The last attempt failed with: "+d.Certificate.Error)
	}
	// While failed attempts back off Re-verify starts nothing; saying it does
	// would send the customer clicking.
	if c := d.Certificate; c.NextAttemptAt != nil && m.now().Before(*c.NextAttemptAt) {
		steps = append(steps, fmt.Sprintf("The next attempt starts by itself at %s UTC (Re-verify does not bring it forward): %s.",
			c.NextAttemptAt.UTC().Format("2006-01-02 15:04"), c.NextAttemptReason))
	} else {
		steps = append(steps, "Choose Re-verify to start a new certificate attempt.")
	}
	return steps
}

// DevelopmentTarget is the placeholder CNAME target of development mode,
// a host no customer's DNS can point at.
const DevelopmentTarget = "localhost"

// CNAMETarget is where customers point their domains; "" (no domain can be
// added) without --domain or --cname-target.
func (m *Manager) CNAMETarget() string { return dnscheck.Canonical(m.cfg.Platform.CNAMETarget) }
