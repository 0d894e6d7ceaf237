package domains

import (
	"context"
	"time"

	"petstore/domains/certs"
	"petstore/store"
)

// Several instances may share one store (PostgreSQL); the others follow
// one's changes from the store's change notice.

// followStore registers for the store's change notices. The store calls
// the listener on its own goroutine, sometimes inside one of this
// instance's writes, so the listener only wakes syncWithStore.
func (m *Manager) followStore() {
	m.storeChanged = make(chan struct{}, 1)
	m.db.OnChange(m.wake)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for {
			select {
			case <-m.ctx.Done():
				return
			case <-m.storeChanged:
				m.syncWithStore(m.ctx)
			}
		}
	}()
}

func (m *Manager) wake() {
	select {
	case m.storeChanged <- struct{}{}:
	default: // a wake-up is pending; it reads the newest state
	}
}

// syncWithStore rebuilds the routing table, and so the certificate cache;
// this instance's own changes were applied already and find nothing to do.
func (m *Manager) syncWithStore(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := m.Refresh(ctx); err != nil {
		// The store may be away for a while: try again soon regardless.
		m.log.Warn("following another instance's change", "err", err)
		time.AfterFunc(time.Second, m.wake)
	}
}

// followTable brings the certificates in memory in line with a change of
// the routing table, whichever instance made it.
func (m *Manager) followTable(ctx context.Context, before, after *routingTable) {
	if m.certs == nil {
		return
	}
	moved := func(n certs.Name) bool { return n.Served && !n.Allowed }
	for name, n := range before.names {
		if n.Served && !after.names[name].Served {
			// Removed: the next handshake must fail.
			m.certs.Removed(name)
		}
	}
	for name, n := range after.names {
		switch was := before.names[name]; {
		case moved(n) && !moved(was):
			// Moved: served until expiry, never renewed.
			m.certs.Keep(ctx, name)
		case n.Served && !moved(n) && moved(was):
			// Verified again: managed again.
			m.certs.Release(ctx, name)
		}
	}
}

// dnsCheckLockPrefix names an instance's lock over a background DNS check.
const dnsCheckLockPrefix = "dnscheck/"

// checkDueDomain runs a due domain's background check unless another
// instance is checking it or did. The store's named lock works on both
// stores; a row lock would hold a transaction for the whole DNS check. A
// checked domain's NextCheckAt has moved, so the next holder skips it.
func (m *Manager) checkDueDomain(ctx context.Context, name string) {
	release := certs.TryLock(ctx, m.db, m.log, dnsCheckLockPrefix+name, "background check")
	if release == nil {
		return // another instance is checking it now, or the store failed
	}
	defer release()
	// The list may be older than another instance's check.
	d, err := m.db.Domain(ctx, name)
	if err != nil || d.NextCheckAt == nil || d.NextCheckAt.After(m.now()) {
		return
	}
	m.log.Info("checking a domain's DNS in the background", "domain", name)
	res, own := m.check(ctx, d)
	if _, err := m.apply(ctx, name, res, own, false); err != nil && store.ErrorCode(err) != store.ENOTFOUND {
		m.log.Error("background check", "domain", name, "err", err)
	}
}
