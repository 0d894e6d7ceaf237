package domains

import (
	"context"

	"petstore/store"
)

// Run does the background work until ctx ends: it loads issued certificates,
// resumes issuance a restart cut short, then checks due domains.
func (m *Manager) Run(ctx context.Context) {
	if m.certs != nil {
		m.certs.Resume(ctx)
	}
	// The checks stop with ctx or at Close, whichever comes first.
	ticking, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(m.ctx, stop)()
	store.EveryTick(ticking, m.cfg.TickEvery, func() { m.checkDue(ctx) })
}

// checkDue runs the checks whose time has come; Run calls it on a timer.
func (m *Manager) checkDue(ctx context.Context) {
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
		if d.NextCheckAt != nil && !d.NextCheckAt.After(now) {
			m.checkDueDomain(ctx, d.Name)
		}
	}
}
