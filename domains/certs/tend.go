// The certificate loop, and certificates through a domain's life: restart,
// expiry, files gone from storage, removal, moved domains.

package certs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"time"

	"github.com/caddyserver/certmagic"

	"petstore/store"
)

// Tend does one round of the certificate loop: due verified domains
// without a certificate get one; a certificate whose file left storage is
// recorded removed and requested again; one past notAfter is recorded
// expired, and one close to it, not renewed, expiring (once).
func (c *Certs) Tend(ctx context.Context) {
	ds, err := c.db.Domains(ctx)
	if err != nil {
		c.log.Error("listing domains", "err", err)
		return
	}
	now := c.now().UTC()
	for _, d := range ds {
		if ctx.Err() != nil {
			return
		}
		cert := d.Certificate
		switch cert.State {
		case store.CertIssued, store.CertRenewing, store.CertExpired:
			if !c.inStorage(ctx, d.Name) {
				c.save(ctx, d.Name, func(cert *store.Certificate) {
					cert.State = store.CertNone
					cert.Serial, cert.Names, cert.NotBefore, cert.NotAfter, cert.RenewalDueAt, cert.ExpiringNotedAt = "", nil, nil, nil, nil, nil
					cert.Events = addEvent(cert.Events, store.CertEvent{Kind: store.CertEventRemoved, At: now, Detail: "the certificate file is no longer in storage"})
				})
				c.cache.RemoveManaged([]certmagic.SubjectIssuer{{Subject: d.Name}})
				if c.mayObtain(d) {
					c.obtain(d.Name)
				}
				continue
			}
			if cert.State != store.CertExpired && cert.NotAfter != nil {
				switch {
				case !now.Before(*cert.NotAfter):
					c.save(ctx, d.Name, func(cert *store.Certificate) { cert.State = stateWhileRenewing(cert, now, cert.State) })
				case c.mayObtain(d) && expiringDue(cert, now):
					c.save(ctx, d.Name, func(cert *store.Certificate) { noteExpiring(cert, now) })
				default:
					c.watch(cert)
				}
			}
		default:
			if c.mayObtain(d) && (cert.NextAttemptAt == nil || !now.Before(*cert.NextAttemptAt)) {
				c.obtain(d.Name)
			}
		}
	}
}

// mayObtain reports whether d may have a certificate obtained: a verified
// domain, or an owned one (through DNS-01, once its CNAME is in place).
func (c *Certs) mayObtain(d store.Domain) bool {
	switch d.State {
	case store.DomainVerified:
		return true
	case store.DomainOwned:
		return c.dnsObtainer != nil && d.Delegation != nil && d.Delegation.Delegated
	}
	return false
}

// expiringNotice is how long before notAfter an unrenewed certificate is
// announced as expiring.
const expiringNotice = 14 * 24 * time.Hour

// ExpiringAt is when a certificate not renewed by then is announced as
// expiring: expiringNotice before notAfter, or for a short-lived one when a
// sixth of its lifetime is left, so that its renewal (due at a third) had
// as long again to succeed. ARI's suggested time, anywhere in a window, is
// not used. Nil without a notAfter.
func ExpiringAt(cert store.Certificate) *time.Time {
	if cert.NotAfter == nil {
		return nil
	}
	notice := expiringNotice
	if cert.NotBefore != nil {
		notice = min(notice, cert.NotAfter.Sub(*cert.NotBefore)/6)
	}
	return new(cert.NotAfter.Add(-notice))
}

// expiringDue reports whether the certificate in use is due to be
// announced as expiring and has not been.
func expiringDue(cert store.Certificate, now time.Time) bool {
	if cert.ExpiringNotedAt != nil || (cert.State != store.CertIssued && cert.State != store.CertRenewing) {
		return false
	}
	at := ExpiringAt(cert)
	return at != nil && !now.Before(*at) && now.Before(*cert.NotAfter)
}

// noteExpiring records the expiring event once: the store may run a change
// more than once, and a renewal may have landed since the round's read.
func noteExpiring(cert *store.Certificate, now time.Time) {
	if !expiringDue(*cert, now) {
		return
	}
	cert.ExpiringNotedAt = &now
	detail := "serial " + cert.Serial + " expires at " + cert.NotAfter.UTC().Format(time.RFC3339) + " and has not been renewed"
	if cert.Error != "" {
		detail += "; the last attempt: " + cert.Error
	}
	cert.Events = addEvent(cert.Events, store.CertEvent{Kind: store.CertEventExpiring, At: now, Detail: detail})
}

// watch makes the loop run when the certificate in use is due to be
// announced as expiring and when notAfter passes, whatever its tick.
func (c *Certs) watch(cert store.Certificate) {
	if cert.NotAfter == nil {
		return
	}
	if at := ExpiringAt(cert); cert.ExpiringNotedAt == nil && at != nil && at.After(c.now()) {
		c.wakeAt(*at)
	}
	c.wakeAt(cert.NotAfter.Add(time.Millisecond))
}

// wakeAt makes the loop run once t, by the certificates' clock, passed.
func (c *Certs) wakeAt(t time.Time) {
	// The timer runs on the wall clock.
	at := time.Now().Add(t.Sub(c.now()))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx.Err() != nil {
		return
	}
	// One timer, for the soonest moment; each round sets it again.
	if time.Now().Before(c.expiresAt) && !at.Before(c.expiresAt) {
		return
	}
	c.expiresAt = at
	c.expiryTimer.Reset(time.Until(at))
}

func (c *Certs) wake() {
	select {
	case c.tend <- struct{}{}:
	default: // a round is pending
	}
}

// inStorage reports whether name's certificate is stored under any CA.
func (c *Certs) inStorage(ctx context.Context, name string) bool {
	return slices.ContainsFunc(c.issuers, func(iss *certmagic.ACMEIssuer) bool {
		return c.storage.Exists(ctx, certmagic.StorageKeys.SiteCert(iss.IssuerKey(), name))
	})
}

// Resume loads issued certificates into the cache and resumes issuance
// that a restart cut short.
func (c *Certs) Resume(ctx context.Context) {
	ds, err := c.db.Domains(ctx)
	if err != nil {
		c.log.Error("listing domains", "err", err)
		return
	}
	for _, d := range ds {
		switch {
		case !c.mayObtain(d):
		case d.Certificate.State == store.CertIssued:
			c.watch(d.Certificate)
			if _, err := c.certs.CacheManagedCertificate(ctx, d.Name); err != nil {
				c.log.Warn("loading certificate", "domain", d.Name, "err", err)
				c.obtain(d.Name)
			}
		default:
			c.obtain(d.Name)
		}
	}
}

// Forget is the certificates' part of a removal, once the routing table
// no longer has it: the certificate leaves memory and storage.
func (c *Certs) Forget(ctx context.Context, name string) error {
	c.Removed(name)
	for _, iss := range c.issuers {
		prefix := certmagic.StorageKeys.CertsSitePrefix(iss.IssuerKey(), name)
		if err := c.storage.Delete(ctx, prefix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("deleting the certificate of %s: %w", name, err)
		}
	}
	return nil
}

// Removed follows a domain that left the routing table: the next
// handshake must fail, so an attempt stops and the certificate goes.
func (c *Certs) Removed(name string) {
	c.stopObtaining(name)
	c.DropKept(name, false)
	c.cache.RemoveManaged([]certmagic.SubjectIssuer{{Subject: name}})
}

// certAttemptLockPrefix names an instance's lock over a domain's first
// issuance attempt.
const certAttemptLockPrefix = "certattempt/"

// claimAttempt makes this instance the only one attempting name's
// certificate and reports whether one is still wanted (release non-nil:
// claimed; delegated: DNS-01). The storage lock alone would let a waiter
// order right after another's failure, skipping its back-off, or order
// what was just obtained elsewhere.
func (c *Certs) claimAttempt(ctx context.Context, name string) (release func(), wanted, delegated bool) {
	// Without the lock another instance is attempting it, or the store
	// failed and the next round tries again.
	if release = TryLock(ctx, c.db, c.log, certAttemptLockPrefix+name, "certificate attempt"); release == nil {
		return nil, false, false
	}
	d, err := c.db.Domain(ctx, name)
	if err != nil {
		return release, false, false
	}
	cert := d.Certificate
	switch {
	case cert.NextAttemptAt != nil && c.now().Before(*cert.NextAttemptAt):
		return release, false, false
	case cert.State == store.CertIssued || cert.State == store.CertRenewing:
		if _, err := c.certs.CacheManagedCertificate(ctx, name); err == nil {
			return release, false, false
		}
	}
	return release, true, d.Delegation != nil && d.Delegation.Delegated
}

// TryLock takes the store's named lock (certmagic's, cross-instance)
// without waiting; nil when another holds it or the store failed (logged).
func TryLock(ctx context.Context, kv store.KeyValue, log *slog.Logger, lock, what string) (release func()) {
	got, err := kv.TryLock(ctx, lock)
	if err != nil {
		log.Warn(what+": taking its lock", "lock", lock, "err", err)
	}
	if !got {
		return nil
	}
	return func() {
		if err := kv.Unlock(context.WithoutCancel(ctx), lock); err != nil {
			log.Warn(what+": releasing its lock", "lock", lock, "err", err)
		}
	}
}
