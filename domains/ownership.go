package domains

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"strings"
	"sync"
	"time"

	"petstore/domains/dnscheck"
	"petstore/store"
)

// Moving a live domain without downtime (--acme-dns-zone): a domain gets an
// ownership TXT record and an _acme-challenge CNAME into the service's
// zone. Once the TXT is found it is owned, and its certificate is obtained
// through DNS-01 before its traffic moves, so it is served at once when
// its DNS points here.

// lowerBase32 writes random bytes as DNS-safe lower-case text.
var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

func randomText(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return lowerBase32.EncodeToString(b)
}

// delegationFor is a new domain's delegation, nil without a zone: an
// ownership token and a random challenge label, which stay until the
// domain is removed. A wildcard and its base both attached share theirs:
// their records share one name (RFC 8555 section 8.4), which holds one
// CNAME only, so the second gets the first's token and label; its checks'
// findings stay its own.
func (m *Manager) delegationFor(ctx context.Context, name string) *store.Delegation {
	if m.cfg.ACMEDNSZone == "" {
		return nil
	}
	other := "*." + name
	if dnscheck.IsWildcard(name) {
		other = dnscheck.WildcardBase(name)
	}
	if o, err := m.db.Domain(ctx, other); err == nil && o.Delegation != nil {
		return &store.Delegation{Token: o.Delegation.Token, Label: o.Delegation.Label, Target: o.Delegation.Target}
	}
	label := randomText(10)
	return &store.Delegation{Token: "petstore-" + randomText(20), Label: label, Target: label + "." + m.cfg.ACMEDNSZone}
}

// records lists the DNS records a domain's customer creates: those that
// point it here, then those that move it without downtime.
func (m *Manager) records(d *store.Domain) []store.DNSRecord {
	rs := m.cfg.Platform.Records(d.Name, d.Apex)
	if d.Delegation != nil {
		rs = append(rs, dnscheck.DelegationRecords(dnscheck.RecordName(d.Name), d.Delegation.Token, d.Delegation.Target)...)
	}
	return rs
}

// check checks where a domain points and, with a delegation, its
// ownership and delegation records, at once.
func (m *Manager) check(ctx context.Context, d store.Domain) (store.DomainCheck, *dnscheck.Ownership) {
	if d.Delegation == nil {
		return m.checker.Check(ctx, d.Name), nil
	}
	var own dnscheck.Ownership
	var wg sync.WaitGroup
	wg.Go(func() {
		own = m.checker.CheckOwnership(ctx, dnscheck.RecordName(d.Name), d.Delegation.Token, d.Delegation.Target)
	})
	res := m.checker.Check(ctx, d.Name)
	wg.Wait()
	return res, &own
}

// applyOwnership records a check's ownership findings, moving a pending
// domain to owned or back, and reports whether it stays owned.
func (m *Manager) applyOwnership(d *store.Domain, own *dnscheck.Ownership, now time.Time) (owned bool) {
	if own == nil || d.Delegation == nil {
		return false
	}
	if own.Known {
		d.Delegation.OwnershipFound, d.Delegation.Delegated = own.Found, own.Delegated
	}
	switch {
	case d.State == store.DomainPending && own.Known && own.Found:
		d.State = store.DomainOwned
		d.Delegation.OwnedAt = &now
		d.CheckAttempts = 0
	case d.State == store.DomainOwned && own.Known && !own.Found:
		d.State = store.DomainPending
		d.Delegation.OwnershipLostAt = &now
		return false
	}
	if d.State != store.DomainOwned {
		return false
	}
	// The customer's switch may take weeks: checked regularly, no end.
	d.NextCheckAt = new(now.Add(m.cfg.OwnedCheckEvery))
	return true
}

// challengeLabel is the label an identifier's DNS-01 challenge is
// delegated to: its domain's, or for a wildcard's base, the wildcard's.
func (m *Manager) challengeLabel(ctx context.Context, identifier string) (string, error) {
	name := strings.TrimPrefix(identifier, "*.")
	d, err := m.db.Domain(ctx, name)
	if store.ErrorCode(err) == store.ENOTFOUND {
		d, err = m.db.Domain(ctx, "*."+name)
	}
	if err != nil {
		return "", err
	}
	if d.Delegation == nil {
		return "", store.Errorf(store.ECONFLICT, "%s was added before the service answered an ACME DNS zone: it has no delegated challenge", identifier)
	}
	return d.Delegation.Label, nil
}
