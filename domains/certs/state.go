// The one writer of certificate state: every change of a certificate
// record passes save, which calls Config.OnChange once it is committed.

package certs

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"slices"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3/acme"

	"petstore/store"
)

// keepEvents is how many lifecycle events a domain keeps.
const keepEvents = 10

// Change is one committed change of a domain's certificate record that
// moved its state or recorded a lifecycle event.
type Change struct {
	// Domain is the domain's name.
	Domain string
	// From and To are the states before and after (store.Cert*); equal when
	// only an event was recorded, such as a failed renewal of a valid one.
	From, To string
	// Event is the lifecycle event this change recorded, or nil.
	Event *store.CertEvent
	// Certificate is the record after the change.
	Certificate store.Certificate
	// At is when the change was made, by the certificates' clock.
	At time.Time
}

// save changes a domain's certificate record (none for names without one)
// and passes a change of state or event to Config.OnChange once, after the
// commit, on the caller's goroutine.
func (c *Certs) save(ctx context.Context, name string, change func(*store.Certificate)) store.Certificate {
	now := c.now().UTC()
	// The issuance context may be ending; the record must still be saved.
	ctx = context.WithoutCancel(ctx)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var from string
	var before *store.CertEvent
	d, err := c.db.UpdateDomain(ctx, name, func(d *store.Domain) error {
		// The store may run this more than once: only the last run counts.
		from, before = d.Certificate.State, lastEvent(d.Certificate.Events)
		change(&d.Certificate)
		d.Certificate.UpdatedAt = &now
		return nil
	})
	if err != nil {
		if store.ErrorCode(err) != store.ENOTFOUND {
			c.log.Error("saving certificate state", "domain", name, "err", err)
		}
		return store.Certificate{}
	}
	cert := d.Certificate
	ch := Change{Domain: name, From: from, To: cert.State, Certificate: cert, At: now}
	if after := lastEvent(cert.Events); after != nil && (before == nil || *after != *before) {
		ch.Event = after
	}
	if cert.State == store.CertIssued || cert.State == store.CertRenewing {
		c.watch(cert)
	}
	if c.cfg.OnChange != nil && (ch.From != ch.To || ch.Event != nil) {
		c.cfg.OnChange(ctx, ch)
	}
	return cert
}

func lastEvent(events []store.CertEvent) *store.CertEvent {
	if len(events) == 0 {
		return nil
	}
	e := events[len(events)-1]
	return &e
}

// Wants reports whether a verified domain with this record needs a
// certificate attempt (maintenance renews what is in the cache).
func Wants(cert store.Certificate) bool {
	return !slices.Contains([]string{store.CertIssued, store.CertRenewing, store.CertExpired}, cert.State)
}

// Request is called when a domain is verified (again) and Wants a
// certificate: the record says pending, unless failed attempts are backing
// off, and an attempt starts. It returns the record as saved; the zero
// Certificate when the store failed (logged; the loop tries again).
func (c *Certs) Request(ctx context.Context, name string) store.Certificate {
	now := c.now().UTC()
	cert := c.save(ctx, name, func(cert *store.Certificate) {
		if Wants(*cert) && (cert.NextAttemptAt == nil || !now.Before(*cert.NextAttemptAt)) {
			cert.State = store.CertPending
		}
	})
	c.obtain(name)
	return cert
}

// onEvent records renewals from certmagic's events. A first issuance is
// recorded by its attempt, once cached, so that issued means handshakes
// find it.
func (c *Certs) onEvent(ctx context.Context, event string, data map[string]any) error {
	name, _ := data["identifier"].(string)
	if renewal, _ := data["renewal"].(bool); name == "" || !renewal {
		return nil
	}
	switch event {
	case "cert_obtaining":
		now := c.now().UTC()
		c.save(ctx, name, func(cert *store.Certificate) {
			cert.State = stateWhileRenewing(cert, now, store.CertRenewing)
			cert.LastAttempt = &store.CertAttempt{At: now, Renewal: true}
		})
	case "cert_obtained":
		path, _ := data["certificate_path"].(string)
		leaf, err := c.storedLeaf(ctx, path)
		if err != nil {
			return nil
		}
		issuerKey, _ := data["issuer"].(string)
		c.recordIssued(ctx, name, leaf, issuerKey, true)
	case "cert_failed":
		msg := "the certificate authority refused or did not answer"
		if err, ok := data["error"].(error); ok && err != nil {
			msg = err.Error()
		}
		now := c.now().UTC()
		c.save(ctx, name, func(cert *store.Certificate) {
			// The current certificate stays in use until it expires.
			cert.State = stateWhileRenewing(cert, now, store.CertIssued)
			cert.Error = msg
			cert.LastAttempt = &store.CertAttempt{At: now, Renewal: true, Error: msg}
			cert.Events = addEvent(cert.Events, store.CertEvent{Kind: store.CertEventFailed, At: now, Detail: "renewal: " + msg})
		})
	}
	return nil
}

// stateWhileRenewing keeps an expired certificate expired while renewals
// fail, so that the state does not swing between issued and expired.
func stateWhileRenewing(cert *store.Certificate, now time.Time, state string) string {
	if cert.NotAfter != nil && !now.Before(*cert.NotAfter) {
		return store.CertExpired
	}
	return state
}

func (c *Certs) storedLeaf(ctx context.Context, key string) (*x509.Certificate, error) {
	pemBytes, err := c.storage.Load(ctx, key)
	if err != nil {
		return nil, err
	}
	return parseLeaf(pemBytes)
}

func parseLeaf(pemBytes []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, fmt.Errorf("no PEM block")
	}
	return x509.ParseCertificate(block.Bytes)
}

// recordIssued stores the details of the certificate now in use; the
// event and the attempt both call it, and the serial tells if it is news.
func (c *Certs) recordIssued(ctx context.Context, name string, leaf *x509.Certificate, issuerKey string, renewal bool) {
	now := c.now().UTC()
	serial := fmt.Sprintf("%x", leaf.SerialNumber)
	due := c.renewalDue(ctx, issuerKey, name, leaf)
	ca := c.caOfIssuer(issuerKey)
	c.save(ctx, name, func(cert *store.Certificate) {
		if cert.Serial != serial {
			kind := store.CertEventObtained
			if renewal || cert.Serial != "" {
				kind = store.CertEventRenewed
			}
			cert.Events = addEvent(cert.Events, store.CertEvent{Kind: kind, At: now, Detail: "serial " + serial + " from " + ca})
			cert.LastAttempt = &store.CertAttempt{At: now, Renewal: kind == store.CertEventRenewed}
			cert.ExpiringNotedAt = nil
		} else if cert.State == store.CertIssued && cert.IssuerCA != "" {
			return
		}
		cert.State = store.CertIssued
		cert.Issuer, cert.IssuerCA, cert.Serial, cert.Names = leaf.Issuer.CommonName, ca, serial, leaf.DNSNames
		cert.NotBefore, cert.NotAfter, cert.RenewalDueAt = new(leaf.NotBefore.UTC()), new(leaf.NotAfter.UTC()), due
		cert.Error, cert.NextAttemptAt, cert.NextAttemptReason, cert.FailedAttempts = "", nil, "", 0
	})
}

// caOfIssuer names the CA behind a certmagic issuer key by its directory URL.
func (c *Certs) caOfIssuer(issuerKey string) string {
	for _, iss := range c.issuers {
		if iss.IssuerKey() == issuerKey {
			return iss.CA
		}
	}
	return issuerKey
}

// renewalDue is when maintenance starts renewing: the time chosen in the
// CA's ARI window, else certmagic's default.
func (c *Certs) renewalDue(ctx context.Context, issuerKey, name string, leaf *x509.Certificate) *time.Time {
	var meta struct {
		IssuerData struct {
			RenewalInfo *acme.RenewalInfo `json:"renewal_info"`
		} `json:"issuer_data"`
	}
	if b, err := c.storage.Load(ctx, certmagic.StorageKeys.SiteMeta(issuerKey, name)); err == nil && json.Unmarshal(b, &meta) == nil {
		if ri := meta.IssuerData.RenewalInfo; ri != nil {
			if !ri.SelectedTime.IsZero() {
				return new(ri.SelectedTime.UTC())
			}
			if !ri.SuggestedWindow.Start.IsZero() {
				return new(ri.SuggestedWindow.Start.UTC())
			}
		}
	}
	lifetime := leaf.NotAfter.Sub(leaf.NotBefore)
	return new(leaf.NotAfter.Add(-lifetime / 3).UTC())
}

func addEvent(events []store.CertEvent, e store.CertEvent) []store.CertEvent {
	events = append(events, e)
	if len(events) > keepEvents {
		events = append([]store.CertEvent(nil), events[len(events)-keepEvents:]...)
	}
	return events
}
