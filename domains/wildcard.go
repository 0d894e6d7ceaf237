package domains

import (
	"petstore/domains/dnscheck"
	"petstore/store"
)

// normalize is the name a domain is added under: a wildcard when the
// customer typed one and the service answers an ACME DNS zone (a wildcard
// needs DNS-01, RFC 8555 section 7.1.3, through that zone); any other
// name as Platform.Normalize gives it.
func (m *Manager) normalize(input string) (string, error) {
	if !dnscheck.LooksLikeWildcard(input) {
		return m.cfg.Platform.Normalize(input)
	}
	name, err := m.cfg.Platform.NormalizeWildcard(input)
	if err != nil {
		return "", err
	}
	if m.cfg.ACMEDNSZone == "" {
		return "", store.Errorf(store.ENOACMEDNSZONE,
			"%s is a wildcard domain, and its certificate can only be validated through DNS-01, which needs this service to answer an ACME DNS zone: start it with --acme-dns-zone (docs/domains.md, The ACME DNS zone, tells how to delegate one); until then add each name on its own, such as www.%s",
			name, dnscheck.WildcardBase(name))
	}
	return name, nil
}

// wildcardCertificateBlocked reports whether d is a wildcard whose
// _acme-challenge CNAME does not point into the zone yet: an order (DNS-01
// only) could only fail and count against the CA's limits.
func wildcardCertificateBlocked(d *store.Domain) bool {
	return dnscheck.IsWildcard(d.Name) && (d.Delegation == nil || !d.Delegation.Delegated)
}
