// Setting up certmagic for a Manager: the certificate cache, the configs for
// attached domains and for on-demand names, one ACME issuer per CA, and what
// the HTTPS listener and the HTTP-01 challenge use from them.

package domains

import (
	"crypto/tls"
	"net/http"
	"time"

	"github.com/caddyserver/certmagic"
)

// DefaultCA is the ACME directory certificates come from unless the
// operator names others (--acme-ca): Let's Encrypt's production CA.
const DefaultCA = "https://acme-v02.api.letsencrypt.org/directory"

// setUpCertificates builds the cache, the configs and the issuers from a.
func (m *Manager) setUpCertificates(a *ACME) {
	zl := zapToSlog(m.log, nil)
	m.cache = certmagic.NewCache(certmagic.CacheOptions{
		GetConfigForCert:   m.configForCert,
		RenewCheckInterval: orDefault(a.RenewInterval, 10*time.Minute),
		Logger:             zl,
	})
	storage := CertStorage(m.db)
	m.certs = certmagic.New(m.cache, certmagic.Config{Storage: storage, OnEvent: m.onEvent, Logger: zl})
	m.onDemand = certmagic.New(m.cache, certmagic.Config{
		Storage: storage,
		// On-demand issuance serves names nobody obtained ahead of time (the
		// default address); the decision function denies everything else.
		OnDemand: &certmagic.OnDemandConfig{DecisionFunc: m.decide},
		OnEvent:  m.onEvent,
		Logger:   zl,
	})
	// The ACME client's log is where a failed validation shows, whatever
	// challenge type or CA it was.
	issuerLog := zapToSlog(m.log, m.noteFailedValidation)
	m.challengeTypes = 1
	if !a.DisableHTTPChallenge {
		m.challengeTypes = 2
	}
	m.obtainer = certmagic.New(m.cache, certmagic.Config{Storage: storage, OnEvent: m.onEvent, Logger: zl})
	// certmagic.New gives a config without issuers Let's Encrypt's: the
	// configured CAs replace it rather than follow it.
	m.certs.Issuers, m.obtainer.Issuers = nil, nil
	for _, ca := range append([]string{a.CA}, a.FallbackCAs...) {
		iss := certmagic.NewACMEIssuer(m.certs, certmagic.ACMEIssuer{
			CA:                   ca,
			TestCA:               ca,
			Email:                a.Email,
			Agreed:               true,
			TrustedRoots:         a.TrustedRoots,
			AltHTTPPort:          a.HTTPPort,
			AltTLSALPNPort:       a.TLSPort,
			DisableHTTPChallenge: a.DisableHTTPChallenge,
			Profile:              a.Profile,
			Logger:               issuerLog,
		})
		m.issuers = append(m.issuers, iss)
		m.certs.Issuers = append(m.certs.Issuers, iss)
		m.obtainer.Issuers = append(m.obtainer.Issuers, promptlessIssuer{iss})
	}
	m.onDemand.Issuers = m.certs.Issuers
	// The certificate loop keeps the stored records honest and starts due
	// attempts until Close.
	m.wg.Add(1)
	go untilClosed(m, time.Tick(m.cfg.TickEvery), m.TendCertificates)
}

// configForCert tells maintenance which config a cached certificate
// belongs to: an attached domain's is renewed in the background; the
// default address's (and a moved domain's, which gets no new one) stay
// with the on-demand config, which maintenance skips.
func (m *Manager) configForCert(c certmagic.Certificate) (*certmagic.Config, error) {
	t := m.table.Load()
	for _, n := range c.Names {
		if !t.certAllowed[n] || n == t.defaultAddr {
			return m.onDemand, nil
		}
	}
	return m.certs, nil
}

// TLSConfig is the configuration of the HTTPS listener: certificates from
// the cache, loaded or obtained on demand for allowed names only, and
// TLS-ALPN-01 challenges answered in the handshake.
func (m *Manager) TLSConfig() *tls.Config {
	if m.certs == nil {
		return nil
	}
	tc := m.onDemand.TLSConfig()
	tc.GetCertificate = m.getCertificate
	tc.NextProtos = append(tc.NextProtos, "h2", "http/1.1")
	tc.MinVersion = tls.VersionTLS12
	return tc
}

// HTTPChallengeHandler answers ACME HTTP-01 challenges and passes every
// other request to next.
func (m *Manager) HTTPChallengeHandler(next http.Handler) http.Handler {
	if len(m.issuers) == 0 {
		return next
	}
	// Challenges in flight are kept per name, whichever CA asked.
	return m.issuers[0].HTTPChallengeHandler(next)
}
