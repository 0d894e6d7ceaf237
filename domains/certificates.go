package domains

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io/fs"
	"time"

	"petstore/store"
)

var fsErrNotExist = fs.ErrNotExist

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

// obtain requests the certificate of name in the background, replacing an
// attempt already running (Re-verify asks for a new one). certmagic retries
// failures with backoff; each attempt's outcome reaches the domain through
// onEvent.
func (m *Manager) obtain(name string) {
	ctx, cancel := context.WithCancel(m.ctx)
	run := &obtainRun{cancel: cancel}
	m.mu.Lock()
	if old := m.obtaining[name]; old != nil {
		old.cancel()
	}
	m.obtaining[name] = run
	m.mu.Unlock()

	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer func() {
			m.mu.Lock()
			if m.obtaining[name] == run {
				delete(m.obtaining, name)
			}
			m.mu.Unlock()
			cancel()
		}()
		err := m.certs.ObtainCertAsync(ctx, name)
		if err == nil {
			// Into the cache now, so the first handshake finds it and
			// certmagic keeps it renewed.
			var cert certmagicCertificate
			cert, err = m.certs.CacheManagedCertificate(ctx, name)
			if err == nil {
				m.recordIssued(ctx, name, cert.Leaf)
				return
			}
		}
		if ctx.Err() == nil {
			m.log.Warn("certificate not obtained", "domain", name, "err", err)
			m.recordCert(ctx, name, store.Certificate{State: store.CertFailed, Error: err.Error()})
		}
	}()
}

func (m *Manager) stopObtaining(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if run := m.obtaining[name]; run != nil {
		run.cancel()
		delete(m.obtaining, name)
	}
}

// onEvent keeps each domain's certificate state from certmagic's events.
func (m *Manager) onEvent(ctx context.Context, event string, data map[string]any) error {
	name, _ := data["identifier"].(string)
	if name == "" {
		return nil
	}
	switch event {
	case "cert_obtaining":
		m.recordCert(ctx, name, store.Certificate{State: store.CertPending})
	case "cert_obtained":
		if path, ok := data["certificate_path"].(string); ok {
			if pemBytes, err := m.certs.Storage.Load(ctx, path); err == nil {
				if leaf, err := parseLeaf(pemBytes); err == nil {
					m.recordIssued(ctx, name, leaf)
				}
			}
		}
	case "cert_failed":
		msg := "the certificate authority refused or did not answer"
		if err, ok := data["error"].(error); ok && err != nil {
			msg = err.Error()
		}
		m.recordCert(ctx, name, store.Certificate{State: store.CertFailed, Error: msg})
	}
	return nil
}

func parseLeaf(pemBytes []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, fmt.Errorf("no PEM block")
	}
	return x509.ParseCertificate(block.Bytes)
}

func (m *Manager) recordIssued(ctx context.Context, name string, leaf *x509.Certificate) {
	c := store.Certificate{State: store.CertIssued}
	if leaf != nil {
		nb, na := leaf.NotBefore.UTC(), leaf.NotAfter.UTC()
		c.Issuer, c.NotBefore, c.NotAfter = leaf.Issuer.CommonName, &nb, &na
	}
	m.recordCert(ctx, name, c)
}

// recordCert stores a certificate state. Names that are not attached
// domains (the default address) have no state to keep.
func (m *Manager) recordCert(ctx context.Context, name string, c store.Certificate) {
	now := m.now().UTC()
	c.UpdatedAt = &now
	// The issuance context may be ending; the state must still be saved.
	ctx = context.WithoutCancel(ctx)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := m.db.UpdateDomain(ctx, name, func(d *store.Domain) error {
		d.Certificate = c
		return nil
	})
	if err != nil && store.ErrorCode(err) != store.ENOTFOUND {
		m.log.Error("saving certificate state", "domain", name, "err", err)
	}
}
