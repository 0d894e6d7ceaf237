package domains

import (
	"time"

	"petstore/domains/certs"
	"petstore/domains/dnscheck"
	"petstore/store"
)

// A verified domain is marked moved only on evidence that holds: DNS can
// flap while records are edited, and taking HTTPS away on one bad answer
// hurts more than serving a few more hours.
const (
	// moveAfterChecks is how many checks in a row must find the DNS elsewhere.
	moveAfterChecks = 3
	// moveAfterSpan is the least time those checks must span.
	moveAfterSpan = time.Hour
)

// checkEvidence is what a check says about where a domain points.
type checkEvidence int

const (
	// pointsHere: at the platform (CAA blocking a certificate is no sign of a
	// move).
	pointsHere checkEvidence = iota
	// pointsElsewhere: definitive answers routing elsewhere (NXDOMAIN, no
	// record, foreign targets, conflicts).
	pointsElsewhere
	// noEvidence: lookups failed; nothing is known.
	noEvidence
)

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

// judgeLive applies a check to a verified or moved domain. Failed lookups
// change nothing but the next check. The DNS elsewhere moves a verified
// domain only after moveAfterChecks over moveAfterSpan (checked every
// ConfirmEvery, moved or not); back here verifies it at once. wantCert:
// request a certificate.
func judgeLive(cfg *Config, d *store.Domain, res store.DomainCheck, now time.Time) (wantCert bool) {
	switch evidenceOf(res) {
	case noEvidence:
		d.CheckAttempts++
		// Soon, but a DNS provider in trouble is not asked every minute for
		// hours: a minute, doubled after each further failure in a row.
		wait := time.Minute
		for i := 1; i < d.CheckAttempts && wait < cfg.ConfirmEvery; i++ {
			wait *= 2
		}
		next := now.Add(min(wait, cfg.ConfirmEvery))
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
