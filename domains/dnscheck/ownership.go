// Moving a live domain without downtime: the records proving ownership
// and delegating validation, and their check.

package dnscheck

import (
	"cmp"
	"context"
	"strings"
	"sync"

	"github.com/miekg/dns"

	"petstore/store"
)

// TypeTXT is the record type of the ownership record.
const TypeTXT = "TXT"

// The labels the two records are created under.
const (
	OwnershipLabel     = "_petstore-challenge"
	ACMEChallengeLabel = "_acme-challenge"
)

// DelegationRecords lists the records that move a live domain without
// downtime, under recordName: the TXT with token proving ownership while
// traffic goes elsewhere, and the CNAME delegating ACME DNS-01 to target.
func DelegationRecords(recordName, token, target string) []Record {
	recordName = Canonical(recordName)
	host := func(label string) string {
		if h := relativeHost(recordName); h != "@" {
			return label + "." + h
		}
		return label
	}
	return []Record{
		{
			Type: TypeTXT, Host: host(OwnershipLabel), Name: OwnershipLabel + "." + recordName, Value: token, TTL: RecordTTL,
			Purpose: store.RecordPurposeOwnership,
			Note: "Proves that the domain is yours while its traffic still goes elsewhere, so that its certificate can be ready before you switch. " +
				"You may delete it once the domain is verified.",
		},
		{
			Type: TypeCNAME, Host: host(ACMEChallengeLabel), Name: ACMEChallengeLabel + "." + recordName, Value: Canonical(target), TTL: RecordTTL,
			Purpose: store.RecordPurposeDelegation,
			Note: "Lets this service answer the certificate authority's DNS challenge for the domain, so that certificates are obtained before you switch " +
				"and renewed even behind a CDN or proxy. Keep it as long as the domain is attached.",
		},
	}
}

// Ownership is what CheckOwnership found.
type Ownership struct {
	// Known is false when the lookups failed: nothing should change on the
	// strength of this check.
	Known bool
	// Found: the ownership TXT record holds the token.
	Found bool
	// Delegated: the _acme-challenge CNAME points at the target.
	Delegated bool
}

// CheckOwnership looks for DelegationRecords' records under recordName,
// on the authoritative nameservers where it can, as Check does.
func (c *Checker) CheckOwnership(ctx context.Context, recordName, token, target string) Ownership {
	recordName = Canonical(recordName)
	s := &session{c: c, resolvers: c.resolvers(), timeout: cmp.Or(c.Timeout, DefaultTimeout)}
	txtName := OwnershipLabel + "." + recordName
	acmeName := ACMEChallengeLabel + "." + recordName
	s.discover(ctx, txtName)
	var (
		wg      sync.WaitGroup
		txts    []dns.RR
		cname   *dns.Msg
		errTXT  error
		errName error
	)
	wg.Go(func() { txts, errTXT = s.rrset(ctx, txtName, dns.TypeTXT) })
	wg.Go(func() { cname, errName = s.query(ctx, acmeName, dns.TypeCNAME) })
	wg.Wait()
	if errTXT != nil || errName != nil {
		return Ownership{}
	}
	own := Ownership{Known: true, Delegated: cnameOf(cname.Answer, acmeName) == Canonical(target)}
	for _, rr := range txts {
		if strings.Join(rr.(*dns.TXT).Txt, "") == token {
			own.Found = true
		}
	}
	return own
}
