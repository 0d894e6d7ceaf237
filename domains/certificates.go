package domains

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3/acme"

	"petstore/store"
)

// keepEvents is how many lifecycle events a domain keeps.
const keepEvents = 10

// decide is certmagic's on-demand DecisionFunc. It denies by default: only
// the default address and verified attached domains get certificates, so a
// stranger's SNI never makes the service ask the CA for anything.
func (m *Manager) decide(_ context.Context, name string) error {
	if m.CertificateAllowed(name) {
		return nil
	}
	return fmt.Errorf("%s is not a verified domain of this service", name)
}

// CertificateAllowed reports whether name may get a certificate: the
// default address under a platform domain, or a verified attached domain.
// A domain whose DNS moved away may not, until it verifies again.
func (m *Manager) CertificateAllowed(name string) bool {
	return m.table.Load().certAllowed[name]
}

// getCertificate serves handshakes. Attached domains get what maintenance
// keeps in the cache, never an issuance inside the handshake: a visitor
// does not wait for the CA, and a certificate nobody could renew in the
// background is not obtained in a hurry either. Other names go to the
// on-demand config, whose decision function allows the default address only.
func (m *Manager) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := strings.TrimSuffix(strings.ToLower(hello.ServerName), ".")
	if t := m.table.Load(); t.served[name] && name != t.defaultAddr {
		cert, err := m.certs.GetCertificate(hello)
		if err == nil {
			return cert, nil
		}
		// Not in the cache yet (a handshake right after a restart, before
		// Run loaded it, or one obtained by another instance): from
		// storage, never from the CA, and only when the domain's record
		// says there is one. A moved domain's certificate is kept
		// unmanaged until it expires (moved.go) and is never loaded back
		// as a managed one.
		if !t.certAllowed[name] || !t.issued[name] {
			return nil, err
		}
		if _, lerr := m.certs.CacheManagedCertificate(hello.Context(), name); lerr != nil {
			return nil, err
		}
		return m.certs.GetCertificate(hello)
	}
	return m.onDemand.GetCertificate(hello)
}

// onEvent keeps each domain's certificate details from the events of
// renewals, which are maintenance's. A first issuance is recorded by the
// attempt that asked for it (issuance.go): it knows the back-off, and
// records the certificate once it is in the cache, so that a state issued
// means handshakes find it.
func (m *Manager) onEvent(ctx context.Context, event string, data map[string]any) error {
	name, _ := data["identifier"].(string)
	if renewal, _ := data["renewal"].(bool); name == "" || !renewal {
		return nil
	}
	switch event {
	case "cert_obtaining":
		now := m.now().UTC()
		m.updateCert(ctx, name, func(c *store.Certificate) {
			c.State = stateWhileRenewing(c, now, store.CertRenewing)
			c.LastAttempt = &store.CertAttempt{At: now, Renewal: true}
		})
	case "cert_obtained":
		path, _ := data["certificate_path"].(string)
		leaf, err := m.storedLeaf(ctx, path)
		if err != nil {
			return nil
		}
		issuerKey, _ := data["issuer"].(string)
		m.recordIssued(ctx, name, leaf, issuerKey, true)
	case "cert_failed":
		msg := "the certificate authority refused or did not answer"
		if err, ok := data["error"].(error); ok && err != nil {
			msg = err.Error()
		}
		now := m.now().UTC()
		m.updateCert(ctx, name, func(c *store.Certificate) {
			// The current certificate stays in use until it expires;
			// maintenance tries again.
			c.State = stateWhileRenewing(c, now, store.CertIssued)
			c.Error = msg
			c.LastAttempt = &store.CertAttempt{At: now, Renewal: true, Error: msg}
			c.Events = addEvent(c.Events, store.CertEvent{Kind: store.CertEventFailed, At: now, Detail: "renewal: " + msg})
		})
	}
	return nil
}

// stateWhileRenewing is the state of a certificate being renewed, or whose
// renewal failed: an expired one stays expired, so that the state does not
// swing between issued and expired while renewals keep failing.
func stateWhileRenewing(c *store.Certificate, now time.Time, state string) string {
	if c.NotAfter != nil && !now.Before(*c.NotAfter) {
		return store.CertExpired
	}
	return state
}

// storedLeaf parses the certificate stored under key.
func (m *Manager) storedLeaf(ctx context.Context, key string) (*x509.Certificate, error) {
	pemBytes, err := m.certs.Storage.Load(ctx, key)
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

// recordIssued stores the details of the certificate now in use. Both the
// event and the attempt that obtained it call it; the serial tells whether
// it is news.
func (m *Manager) recordIssued(ctx context.Context, name string, leaf *x509.Certificate, issuerKey string, renewal bool) {
	now := m.now().UTC()
	serial := fmt.Sprintf("%x", leaf.SerialNumber)
	due := m.renewalDue(ctx, issuerKey, name, leaf)
	ca := m.caOfIssuer(issuerKey)
	m.updateCert(ctx, name, func(c *store.Certificate) {
		if c.Serial != serial {
			kind := store.CertEventObtained
			if renewal || c.Serial != "" {
				kind = store.CertEventRenewed
			}
			c.Events = addEvent(c.Events, store.CertEvent{Kind: kind, At: now, Detail: "serial " + serial + " from " + ca})
			c.LastAttempt = &store.CertAttempt{At: now, Renewal: kind == store.CertEventRenewed}
		} else if c.State == store.CertIssued && c.IssuerCA != "" {
			return
		}
		c.State = store.CertIssued
		c.Issuer, c.IssuerCA, c.Serial, c.Names = leaf.Issuer.CommonName, ca, serial, leaf.DNSNames
		c.NotBefore, c.NotAfter, c.RenewalDueAt = new(leaf.NotBefore.UTC()), new(leaf.NotAfter.UTC()), due
		c.Error, c.NextAttemptAt, c.NextAttemptReason, c.FailedAttempts = "", nil, "", 0
	})
}

// caOfIssuer names the CA behind a certmagic issuer key by its directory URL.
func (m *Manager) caOfIssuer(issuerKey string) string {
	for _, iss := range m.issuers {
		if iss.IssuerKey() == issuerKey {
			return iss.CA
		}
	}
	return issuerKey
}

// renewalDue is when maintenance starts renewing: the time chosen in the
// CA's ARI window when the CA offers ARI, else certmagic's default of a
// third of the lifetime before expiry.
func (m *Manager) renewalDue(ctx context.Context, issuerKey, name string, leaf *x509.Certificate) *time.Time {
	var meta struct {
		IssuerData struct {
			RenewalInfo *acme.RenewalInfo `json:"renewal_info"`
		} `json:"issuer_data"`
	}
	if b, err := m.certs.Storage.Load(ctx, certmagic.StorageKeys.SiteMeta(issuerKey, name)); err == nil && json.Unmarshal(b, &meta) == nil {
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

// updateCert changes a domain's certificate record. Names that are not
// attached domains (the default address) have no record to keep.
func (m *Manager) updateCert(ctx context.Context, name string, change func(*store.Certificate)) {
	now := m.now().UTC()
	// The issuance context may be ending; the record must still be saved.
	ctx = context.WithoutCancel(ctx)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := m.db.UpdateDomain(ctx, name, func(d *store.Domain) error {
		change(&d.Certificate)
		d.Certificate.UpdatedAt = &now
		return nil
	})
	if err != nil && store.ErrorCode(err) != store.ENOTFOUND {
		m.log.Error("saving certificate state", "domain", name, "err", err)
	}
}

// wantsCertificate reports whether a verified domain with this record
// needs a certificate attempt, and marks it pending unless failed attempts
// are backing off (the record then says until when).
func wantsCertificate(c *store.Certificate, now time.Time) bool {
	switch c.State {
	case store.CertIssued, store.CertRenewing, store.CertExpired:
		// Maintenance renews what is in the cache.
		return false
	}
	if c.NextAttemptAt == nil || !now.Before(*c.NextAttemptAt) {
		c.State = store.CertPending
		c.UpdatedAt = &now
	}
	return true
}

// honest derives the certificate state shown from the stored one and the
// facts now: a certificate past its notAfter is expired, and one whose
// file is gone from storage is none, whatever was stored.
func (m *Manager) honest(ctx context.Context, d store.Domain) store.Domain {
	c := &d.Certificate
	c.FailedValidations = recentFailures(c.FailedValidations, m.now())
	if m.certs == nil || (c.State != store.CertIssued && c.State != store.CertRenewing) {
		return d
	}
	if !m.certInStorage(ctx, d.Name) {
		c.State = store.CertNone
		c.Error = "the certificate is no longer in storage; a new one is requested"
		return d
	}
	if c.NotAfter != nil && !m.now().Before(*c.NotAfter) {
		c.State = store.CertExpired
	}
	return d
}

// certInStorage reports whether a certificate of name is in storage under
// any of the configured CAs.
func (m *Manager) certInStorage(ctx context.Context, name string) bool {
	for _, iss := range m.issuers {
		if m.certs.Storage.Exists(ctx, certmagic.StorageKeys.SiteCert(iss.IssuerKey(), name)) {
			return true
		}
	}
	return false
}
