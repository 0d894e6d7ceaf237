// The certificate loop and the certificates' part in domains' lives:
// resuming after a restart, expiry, files gone from storage, removal, and
// moved domains, whose certificate is kept but not renewed.

package certs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/caddyserver/certmagic"

	"petstore/store"
)

// Tend does one round of the certificate loop: verified domains without a
// certificate whose next attempt is due get one; a certificate whose file
// left storage is recorded as removed and requested again; one past its
// notAfter is recorded as expired, and one close to it, not renewed, as
// expiring (once). The loop runs it on every tick and when the soonest of
// these moments passes.
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
				if d.State == store.DomainVerified {
					c.obtain(d.Name)
				}
				continue
			}
			if cert.State != store.CertExpired && cert.NotAfter != nil {
				switch {
				case !now.Before(*cert.NotAfter):
					c.save(ctx, d.Name, func(cert *store.Certificate) { cert.State = stateWhileRenewing(cert, now, cert.State) })
				case d.State == store.DomainVerified && expiringDue(cert, now):
					c.save(ctx, d.Name, func(cert *store.Certificate) { noteExpiring(cert, now) })
				default:
					c.watch(cert)
				}
			}
		default:
			if d.State == store.DomainVerified && (cert.NextAttemptAt == nil || !now.Before(*cert.NextAttemptAt)) {
				c.obtain(d.Name)
			}
		}
	}
}

// expiringNotice is how long before its notAfter a certificate that was
// not renewed is announced as expiring (certificate.expiring).
const expiringNotice = 14 * 24 * time.Hour

// ExpiringAt is when a certificate not renewed by then is announced as
// expiring: 14 days before its notAfter, or, for one that lives less than
// six times that, when a sixth of its lifetime is left. Renewal is
// normally due when a third is left, so a short-lived certificate is
// announced only once its renewal had as long again to succeed. It does
// not hang on the CA's suggested renewal time (ARI), which may be chosen
// anywhere in a window. Nil without a notAfter.
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

// expiringDue reports whether the certificate in use should now be
// announced as expiring, and has not been.
func expiringDue(cert store.Certificate, now time.Time) bool {
	if cert.ExpiringNotedAt != nil || (cert.State != store.CertIssued && cert.State != store.CertRenewing) {
		return false
	}
	at := ExpiringAt(cert)
	return at != nil && !now.Before(*at) && now.Before(*cert.NotAfter)
}

// noteExpiring records the expiring event of the certificate in use, once:
// the store may run a change more than once, and a renewal may have
// landed since the round read the record.
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

// watch makes sure a round of the certificate loop runs when a
// certificate in use is due to be announced as expiring, and when its
// notAfter passes, so that both are recorded when they happen, whatever
// the loop's tick.
func (c *Certs) watch(cert store.Certificate) {
	if cert.NotAfter == nil {
		return
	}
	if at := ExpiringAt(cert); cert.ExpiringNotedAt == nil && at != nil && at.After(c.now()) {
		c.wakeAt(*at)
	}
	c.wakeAt(cert.NotAfter.Add(time.Millisecond))
}

// wakeAt makes sure a round of the certificate loop runs once t, by the
// certificates' clock, has passed.
func (c *Certs) wakeAt(t time.Time) {
	// The timer runs on the wall clock; the certificates' clock says how
	// far away t is.
	at := time.Now().Add(t.Sub(c.now()))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx.Err() != nil {
		return
	}
	// One timer, for the soonest moment; each round sets it again for the
	// next one.
	if c.expiryTimer != nil && time.Now().Before(c.expiresAt) && !at.Before(c.expiresAt) {
		return
	}
	c.expiresAt = at
	if c.expiryTimer == nil {
		c.expiryTimer = time.AfterFunc(time.Until(at), c.wake)
		return
	}
	c.expiryTimer.Reset(time.Until(at))
}

// wake asks the loop for a round now.
func (c *Certs) wake() {
	select {
	case c.tend <- struct{}{}:
	default: // a round is pending
	}
}

// inStorage reports whether a certificate of name is in storage under
// any of the configured CAs.
func (c *Certs) inStorage(ctx context.Context, name string) bool {
	for _, iss := range c.issuers {
		if c.storage.Exists(ctx, certmagic.StorageKeys.SiteCert(iss.IssuerKey(), name)) {
			return true
		}
	}
	return false
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
		case d.State != store.DomainVerified:
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

// Forget is the certificates' part of a domain's removal, once the routing
// table no longer has it: its certificate leaves memory (Removed) and
// storage.
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
// handshake must fail, so an attempt in flight stops and the certificate,
// kept or managed, leaves memory.
func (c *Certs) Removed(name string) {
	c.stopObtaining(name)
	c.DropKept(name, false)
	c.cache.RemoveManaged([]certmagic.SubjectIssuer{{Subject: name}})
}

// certAttemptLockPrefix names the lock an instance holds while it makes a
// domain's first issuance attempt.
const certAttemptLockPrefix = "certattempt/"

// claimAttempt makes this instance the only one attempting name's
// certificate, and reports whether an attempt is still wanted. certmagic's
// storage lock alone keeps two orders from running at once, but an
// instance that waited on it would order right after another instance's
// failure, skipping the back-off that failure recorded; and one that finds
// the certificate obtained elsewhere only needs to load it. release is
// non-nil when the claim was taken.
func (c *Certs) claimAttempt(ctx context.Context, name string) (release func(), wanted bool) {
	// Without the lock, another instance is attempting it and the store
	// will show its result, or the store failed and the certificate loop
	// tries again at its next round.
	if release = TryLock(ctx, c.db, c.log, certAttemptLockPrefix+name, "certificate attempt"); release == nil {
		return nil, false
	}
	d, err := c.db.Domain(ctx, name)
	if err != nil {
		return release, false
	}
	cert := d.Certificate
	switch {
	case cert.NextAttemptAt != nil && c.now().Before(*cert.NextAttemptAt):
		return release, false
	case cert.State == store.CertIssued || cert.State == store.CertRenewing:
		if _, err := c.certs.CacheManagedCertificate(ctx, name); err == nil {
			return release, false
		}
	}
	return release, true
}

// TryLock takes the store's named lock for the work named what, without
// waiting, and returns its release; nil when another holder has it or
// the store failed (logged). These are the locks certmagic's storage
// uses: they work on both stores, across instances.
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
