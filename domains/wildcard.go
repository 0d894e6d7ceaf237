package domains

import (
	"context"

	"petstore/domains/dnscheck"
	"petstore/store"
)

// normalize is the name a domain is added under: a wildcard
// ("*.shop.example.com") when the customer typed one and the service
// answers an ACME DNS zone, since a CA validates a wildcard through DNS-01
// only (RFC 8555 section 7.1.3), which needs the delegation into that
// zone; any other name as Platform.Normalize gives it.
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
			"%s is a wildcard domain, and its certificate can only be validated through DNS-01, which needs this service to answer an ACME DNS zone: start it with --acme-dns-zone (see the README); until then add each name on its own, such as www.%s",
			name, dnscheck.WildcardBase(name))
	}
	return name, nil
}

// delegationFor is the delegation of a new domain: a new one, except
// where a wildcard and its base are both attached. Their records share
// one name (_acme-challenge.shop.example.com serves *.shop.example.com
// and shop.example.com alike, RFC 8555 section 8.4), which can hold one
// CNAME only, so the second gets the first's token and label; what its
// checks find stays its own.
func (m *Manager) delegationFor(ctx context.Context, name string) *store.Delegation {
	d := m.newDelegation()
	if d == nil {
		return nil
	}
	other := "*." + name
	if dnscheck.IsWildcard(name) {
		other = dnscheck.WildcardBase(name)
	}
	if o, err := m.db.Domain(ctx, other); err == nil && o.Delegation != nil {
		return &store.Delegation{Token: o.Delegation.Token, Label: o.Delegation.Label, Target: o.Delegation.Target}
	}
	return d
}

// wildcardCertificateBlocked reports whether d is a wildcard whose
// certificate cannot be ordered yet: a CA validates a wildcard through
// DNS-01 only, so until its _acme-challenge CNAME points into the zone
// an order could only fail and count against the CA's limits.
func wildcardCertificateBlocked(d *store.Domain) bool {
	return dnscheck.IsWildcard(d.Name) && (d.Delegation == nil || !d.Delegation.Delegated)
}
