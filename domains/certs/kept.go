package certs

import (
	"context"
	"io/fs"

	"github.com/caddyserver/certmagic"
)

// Keep takes a moved domain's certificate out of certmagic's management
// and caches it unmanaged: served until it expires, never renewed.
func (c *Certs) Keep(ctx context.Context, name string) {
	c.stopObtaining(name)
	c.cache.RemoveManaged([]certmagic.SubjectIssuer{{Subject: name}})
	certPEM, keyPEM, err := c.storedCertificate(ctx, name)
	if err != nil {
		return // no certificate: nothing to keep
	}
	leaf, err := parseLeaf(certPEM)
	if err != nil || !c.now().Before(leaf.NotAfter) {
		return // expired: keeping it would only fail handshakes differently
	}
	if _, err := c.certs.CacheUnmanagedCertificatePEMBytes(ctx, certPEM, keyPEM, []string{keptTag}); err != nil {
		c.log.Warn("keeping a moved domain's certificate", "domain", name, "err", err)
	}
}

// keptTag marks a moved domain's certificate in the cache.
const keptTag = "petstore:kept"

// DropKept removes a moved domain's certificate from the cache (with
// expiredOnly, once expired): handshakes then fail at once.
func (c *Certs) DropKept(name string, expiredOnly bool) {
	var hashes []string
	for _, cert := range c.cache.AllMatchingCertificates(name) {
		if cert.HasTag(keptTag) && (!expiredOnly || !c.now().Before(cert.Leaf.NotAfter)) {
			hashes = append(hashes, cert.Hash())
		}
	}
	c.cache.Remove(hashes)
}

// Release hands a domain verified again back to certmagic's management.
func (c *Certs) Release(ctx context.Context, name string) {
	c.DropKept(name, false)
	if _, err := c.certs.CacheManagedCertificate(ctx, name); err != nil {
		c.log.Warn("loading the certificate of a domain that verified again", "domain", name, "err", err)
	}
}

// storedCertificate loads name's certificate and key from the first CA's
// storage (--acme-ca order) holding both.
func (c *Certs) storedCertificate(ctx context.Context, name string) (certPEM, keyPEM []byte, err error) {
	err = fs.ErrNotExist
	for _, iss := range c.issuers {
		if certPEM, err = c.storage.Load(ctx, certmagic.StorageKeys.SiteCert(iss.IssuerKey(), name)); err != nil {
			continue
		}
		if keyPEM, err = c.storage.Load(ctx, certmagic.StorageKeys.SitePrivateKey(iss.IssuerKey(), name)); err == nil {
			return certPEM, keyPEM, nil
		}
	}
	return nil, nil, err
}
