// Setting up certmagic: the cache, the configs, one ACME issuer per CA,
// and the HTTPS listener's TLS config.

package certs

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3"
	"go.uber.org/zap"
)

// setUp builds the cache, the configs and the issuers from a.
func (c *Certs) setUp(a ACME) {
	zl := zapToSlog(c.log)
	c.cache = certmagic.NewCache(certmagic.CacheOptions{
		GetConfigForCert:   c.configForCert,
		RenewCheckInterval: a.RenewInterval,
		Logger:             zl,
	})
	// The storage notes this service's challenges as it presents them.
	c.storage = certStorage{KeyValue: c.db, presented: c.notePresented}
	c.onDemand = certmagic.New(c.cache, certmagic.Config{
		Storage: c.storage,
		// On-demand serves names nobody obtained ahead (the default address);
		// the decision function denies everything else.
		OnDemand: &certmagic.OnDemandConfig{DecisionFunc: c.decide},
		OnEvent:  c.onEvent,
		Logger:   zl,
	})
	c.challengeTypes = 1
	if !a.DisableHTTPChallenge {
		c.challengeTypes = 2
	}
	c.certs, c.obtainer, c.issuers = c.acmeConfigs(a, zl, nil)
	c.onDemand.Issuers = c.certs.Issuers
	if c.cfg.DNS01Solver != nil {
		// Delegated names: the same CAs and storage keys, DNS-01 answered by the
		// service's own zone. No propagation check: the zone answers from the
		// store, on every instance, as soon as the value is written.
		c.dnsCerts, c.dnsObtainer, _ = c.acmeConfigs(a, zl, c.cfg.DNS01Solver)
	}
}

// acmeConfigs makes a managed config and the obtainer of first, single
// attempts, both with one ACME issuer per CA, through dns01 when set.
func (c *Certs) acmeConfigs(a ACME, zl *zap.Logger, dns01 acmez.Solver) (managed, obtainer *certmagic.Config, issuers []*certmagic.ACMEIssuer) {
	managed = certmagic.New(c.cache, certmagic.Config{Storage: c.storage, OnEvent: c.onEvent, Logger: zl})
	obtainer = certmagic.New(c.cache, certmagic.Config{Storage: c.storage, OnEvent: c.onEvent, Logger: zl})
	// certmagic.New's default issuer is replaced, not followed.
	managed.Issuers, obtainer.Issuers = nil, nil
	for _, ca := range append([]string{a.CA}, a.FallbackCAs...) {
		tmpl := certmagic.ACMEIssuer{CA: ca, TestCA: ca, Email: a.Email, Agreed: true, TrustedRoots: a.TrustedRoots, Profile: a.Profile, Logger: zl}
		if dns01 != nil {
			tmpl.DNS01Solver = dns01
		} else {
			tmpl.AltHTTPPort, tmpl.AltTLSALPNPort, tmpl.DisableHTTPChallenge = a.HTTPPort, a.TLSPort, a.DisableHTTPChallenge
		}
		iss := certmagic.NewACMEIssuer(managed, tmpl)
		issuers = append(issuers, iss)
		managed.Issuers = append(managed.Issuers, iss)
		obtainer.Issuers = append(obtainer.Issuers, promptlessIssuer{iss})
	}
	return managed, obtainer, issuers
}

// configForCert tells maintenance a cached certificate's config: attached
// domains' renew in the background (through DNS-01 when delegated, which
// works behind any proxy; owned ones only then); the default address's and
// moved domains' stay on the on-demand config, which maintenance skips.
func (c *Certs) configForCert(cert certmagic.Certificate) (*certmagic.Config, error) {
	delegated := c.dnsCerts != nil
	for _, n := range cert.Names {
		name := c.names(n)
		if name.Owned && name.Delegated {
			continue // renewed ahead of its traffic, through DNS-01
		}
		if !name.Allowed || name.Default {
			return c.onDemand, nil
		}
		delegated = delegated && name.Delegated
	}
	if delegated {
		return c.dnsCerts, nil
	}
	return c.certs, nil
}

// TLSConfig is the HTTPS listener's configuration: certificates from the
// cache for allowed names only, and TLS-ALPN-01 answered in the handshake.
func (c *Certs) TLSConfig() *tls.Config {
	tc := c.onDemand.TLSConfig()
	tc.GetCertificate = c.getCertificate
	tc.NextProtos = append(tc.NextProtos, "h2", "http/1.1")
	tc.MinVersion = tls.VersionTLS12
	return tc
}

// decide is certmagic's on-demand DecisionFunc. It denies by default, so
// that a stranger's SNI never makes the service ask the CA for anything.
func (c *Certs) decide(_ context.Context, name string) error {
	if c.names(name).Allowed {
		return nil
	}
	return fmt.Errorf("%s is not a verified domain of this service", name)
}

// getCertificate serves handshakes. Attached domains get what maintenance
// keeps in the cache, never an issuance in the handshake: a visitor does
// not wait for the CA, and nothing unrenewable is obtained in a hurry.
// Other names go to the on-demand config.
func (c *Certs) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := strings.TrimSuffix(strings.ToLower(hello.ServerName), ".")
	n := c.names(name)
	if !n.Served && n.Cover != "" {
		// Under a served wildcard and not served on its own: the wildcard's
		// certificate, never an issuance for the name.
		name, n = n.Cover, c.names(n.Cover)
	}
	if n.Owned {
		// Its traffic goes elsewhere until it is verified.
		return nil, fmt.Errorf("%s is not served yet: its DNS does not point here", name)
	}
	if n.Served && !n.Default {
		cert, err := c.certs.GetCertificate(hello)
		if err == nil {
			return cert, nil
		}
		// Not cached yet (right after a restart, or obtained by another
		// instance): from storage, never the CA, and only when the record says
		// there is one. A moved domain's kept certificate is never loaded back
		// as managed.
		if !n.Allowed || !n.Issued {
			return nil, err
		}
		if _, lerr := c.certs.CacheManagedCertificate(hello.Context(), name); lerr != nil {
			return nil, err
		}
		return c.certs.GetCertificate(hello)
	}
	return c.onDemand.GetCertificate(hello)
}
