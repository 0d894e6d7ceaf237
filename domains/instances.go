package domains

import (
	"context"
	"time"

	"petstore/domains/certs"
	"petstore/store"
)

// Several instances may share one store (PostgreSQL). What one of them
// changes, the others learn from the store's change notice: the routing
// table is rebuilt, and the certificates in this instance's memory follow
// the domains' new states. Storage needs nothing: it is shared, and the
// instance that made the change already changed it.

// followStore registers for the store's change notices. The store calls
// the listener on its own goroutine, sometimes inside a write of this
// instance, so the listener only wakes the goroutine that syncs with it.
func (m *Manager) followStore() {
	m.storeChanged = make(chan struct{}, 1)
	m.db.OnChange(m.wake)
	m.wg.Add(1)
	go untilClosed(m, m.storeChanged, m.syncWithStore)
}

func (m *Manager) wake() {
	select {
	case m.storeChanged <- struct{}{}:
	default: // a wake-up is pending; it reads the newest state
	}
}

// syncWithStore rebuilds the routing table, which brings the certificate
// cache in line with it. Changes this instance made itself were applied
// when it made them; seeing them again here finds nothing left to do.
func (m *Manager) syncWithStore(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := m.Refresh(ctx); err != nil {
		// The store may be away for a while: try again soon, whether or
		// not another notice comes.
		m.log.Warn("following another instance's change", "err", err)
		time.AfterFunc(time.Second, m.wake)
	}
}

// followTable brings the certificates in this instance's memory in line
// with a change of the routing table, whichever instance made it.
func (m *Manager) followTable(ctx context.Context, before, after *routingTable) {
	if m.certs == nil {
		return
	}
	moved := func(t *routingTable, name string) bool { return t.served[name] && !t.certAllowed[name] }
	for name := range before.served {
		if !after.served[name] {
			// Removed: the next handshake must fail, so an attempt in
			// flight stops and the certificate, kept or managed, leaves
			// memory too.
			m.certs.Removed(name)
		}
	}
	for name := range after.served {
		switch {
		case moved(after, name) && !moved(before, name):
			// Moved: served until expiry, never renewed.
			m.certs.Keep(ctx, name)
		case !moved(after, name) && moved(before, name):
			// Verified again: managed again.
			m.certs.Release(ctx, name)
		}
	}
}

// dnsCheckLockPrefix names the lock an instance holds while it checks a
// domain's DNS in the background.
const dnsCheckLockPrefix = "dnscheck/"

// checkDueDomain runs the background check of one domain whose check was
// due when the list was read, unless another instance is checking it or
// already did. The lock is the store's named lock, the one certmagic's
// storage uses: it works on both stores with no store API for queues. A
// row lock such as SELECT ... FOR UPDATE SKIP LOCKED would hold a
// transaction open for the whole DNS check, which can take seconds, and
// the bbolt store has no rows to lock. Once the check is applied the
// domain's NextCheckAt has moved, so the instance that takes the lock next
// finds it not due and skips it.
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
