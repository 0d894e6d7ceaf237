package domains

import (
	"context"
	"time"

	"petstore/store"
)

// Run does the background work until ctx ends: at start it loads issued
// certificates into the cache and resumes issuance that a restart cut
// short; then it checks due domains: pending ones with backoff for 48
// hours, verified ones periodically, so that a domain whose DNS moved away
// is flagged.
func (m *Manager) Run(ctx context.Context) {
	m.resume(ctx)
	tick := time.Tick(m.cfg.TickEvery)
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.ctx.Done():
			return
		case <-tick:
			m.CheckDue(ctx)
		}
	}
}

// untilClosed is the body of one of the manager's goroutines: it calls do
// each time ch delivers, until Close.
func untilClosed[T any](m *Manager, ch <-chan T, do func(context.Context)) {
	defer m.wg.Done()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-ch:
			do(m.ctx)
		}
	}
}

// certificateDomains lists the domains for the certificate work; none when
// the manager issues no certificates, or when the store fails (logged).
func (m *Manager) certificateDomains(ctx context.Context) []store.Domain {
	if m.certs == nil {
		return nil
	}
	ds, err := m.db.Domains(ctx)
	if err != nil {
		m.log.Error("listing domains", "err", err)
		return nil
	}
	return ds
}

func (m *Manager) resume(ctx context.Context) {
	for _, d := range m.certificateDomains(ctx) {
		switch {
		case d.State != store.DomainVerified:
		case d.Certificate.State == store.CertIssued:
			if _, err := m.certs.CacheManagedCertificate(ctx, d.Name); err != nil {
				m.log.Warn("loading certificate", "domain", d.Name, "err", err)
				m.obtain(d.Name)
			}
		default:
			m.obtain(d.Name)
		}
	}
}

// CheckDue runs the checks whose time has come. Run calls it on a timer;
// it is exported for tests and operators that want a check round now.
func (m *Manager) CheckDue(ctx context.Context) {
	ds, err := m.db.Domains(ctx)
	if err != nil {
		m.log.Error("listing domains", "err", err)
		return
	}
	now := m.now()
	for _, d := range ds {
		if ctx.Err() != nil {
			return
		}
		if d.NextCheckAt == nil || d.NextCheckAt.After(now) {
			continue
		}
		m.checkDueDomain(ctx, d.Name)
	}
}
