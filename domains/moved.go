package domains

import (
	"time"

	"petstore/domains/certs"
	"petstore/domains/dnscheck"
	"petstore/store"
)

// A verified domain is marked moved only on evidence that holds: DNS
// answers can flap while a customer edits records or a provider has an
// incident, and taking HTTPS away on one bad answer hurts more than
// serving a few more hours.
const (
	// moveAfterChecks is how many consecutive checks must find the DNS
	// pointing elsewhere.
	moveAfterChecks = 3
	// moveAfterSpan is how long those checks must be spread over, at least.
	moveAfterSpan = time.Hour
)

// checkEvidence is what a check says about where a domain points.
type checkEvidence int

const (
	// pointsHere: the DNS points at the platform (CAA may still block a
	// new certificate; that is no sign of a move).
	pointsHere checkEvidence = iota
	// pointsElsewhere: definitive answers that route elsewhere: NXDOMAIN or
	// no record, a CNAME or addresses that are not the platform's, records
	// in conflict.
	pointsElsewhere
	// noEvidence: lookups failed; nothing is known.
	noEvidence
)

// evidenceOf classifies a check's findings.
func evidenceOf(res store.DomainCheck) checkEvidence {
	failed := false
	for _, f := range res.Findings {
		switch f.Code {
		case dnscheck.CodeNoRecord, dnscheck.CodeConflictingRecord, dnscheck.CodeCNAMEMismatch, dnscheck.CodeApexNeedsAlias:
			return pointsElsewhere
		case dnscheck.CodeDNSError:
			failed = true
		}
	}
	if failed {
		return noEvidence
	}
	return pointsHere
}

// judgeLive applies a check to a domain that pointed here once (verified
// or moved). Failed lookups are retried soon and change nothing else. The
// DNS pointing elsewhere moves a verified domain only once seen on
// moveAfterChecks consecutive checks spread over moveAfterSpan; until
// then, and while it is moved, it is checked every ConfirmEvery. The DNS
// pointing here again makes it verified at once. wantCert says a
// certificate is to be requested.
func judgeLive(cfg *Config, d *store.Domain, res store.DomainCheck, now time.Time) (wantCert bool) {
	switch evidenceOf(res) {
	case noEvidence:
		d.CheckAttempts++
		// A failure says nothing about the domain, so the next check should
		// come soon, but a DNS provider in trouble should not be asked
		// every minute for hours.
		next := now.Add(doubling(time.Minute, d.CheckAttempts, cfg.ConfirmEvery))
		if d.NextCheckAt == nil || next.Before(*d.NextCheckAt) || !d.NextCheckAt.After(now) {
			d.NextCheckAt = &next
		}
	case pointsElsewhere:
		d.CheckAttempts = 0
		if d.PointsElsewhereSince == nil {
			d.PointsElsewhereSince = &now
		}
		d.PointsElsewhereChecks++
		if d.State == store.DomainVerified && d.PointsElsewhereChecks >= moveAfterChecks &&
			now.Sub(*d.PointsElsewhereSince) >= moveAfterSpan {
			d.State = store.DomainMoved
			d.MovedAt = &now
		}
		d.NextCheckAt = new(now.Add(cfg.ConfirmEvery))
	case pointsHere:
		d.CheckAttempts = 0
		d.PointsElsewhereSince, d.PointsElsewhereChecks = nil, 0
		if d.State == store.DomainMoved {
			d.State = store.DomainVerified
			d.MovedAt = nil
			d.VerifiedAt = &now
		}
		d.NextCheckAt = new(now.Add(cfg.RecheckEvery))
		return res.Verified && certs.Wants(d.Certificate)
	}
	return false
}
