package domains

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// checkCAA applies RFC 8659 for a non-wildcard name: the first CAA RRset
// found climbing from the name towards its registrable domain (aliases
// followed) is the relevant one, and only its "issue" properties count.
// The climb stops before the public suffix: no customer controls it.
func (s *session) checkCAA(ctx context.Context, name string) []Finding {
	ids := s.c.CAAIdentities
	if len(ids) == 0 {
		return nil
	}
	reg := RegistrableDomain(name)
	for cand := name; cand != ""; {
		_, rrs, err := s.rrset(ctx, cand, dns.TypeCAA)
		if err != nil {
			f := dnsErrorFinding(cand, []error{err})
			f.Message += " Certificate authorities refuse to issue while CAA records cannot be read."
			return []Finding{*f}
		}
		if len(rrs) > 0 {
			// Name the records' real owner: when cand is an alias, the
			// relevant CAA records are its target's.
			return caaFindings(name, canonical(rrs[0].Header().Name), rrs, ids)
		}
		if cand == reg || reg == "" {
			break
		}
		_, cand, _ = strings.Cut(cand, ".")
	}
	return nil
}

// caaFindings judges the relevant CAA RRset found at owner for name.
func caaFindings(name, owner string, rrs []dns.RR, ids []string) []Finding {
	var issuers, found, critical []string
	hasIssue, allowed := false, false
	for _, rr := range rrs {
		caa, ok := rr.(*dns.CAA)
		if !ok {
			continue
		}
		found = append(found, fmt.Sprintf("%s CAA %d %s %q", owner, caa.Flag, caa.Tag, caa.Value))
		switch strings.ToLower(caa.Tag) {
		case "issue":
			hasIssue = true
			issuer := issuerDomain(caa.Value)
			if issuer != "" {
				issuers = append(issuers, issuer)
			}
			if issuer != "" && slices.ContainsFunc(ids, func(id string) bool { return canonical(id) == issuer }) {
				allowed = true
			}
		case "issuewild", "iodef", "contactemail", "contactphone", "issuemail", "issuevmc":
			// Known, and irrelevant to a non-wildcard server certificate.
		default:
			// RFC 8659 section 4.1: an unknown property marked critical
			// forbids issuance by a CA that does not understand it.
			if caa.Flag&128 != 0 {
				critical = append(critical, caa.Tag)
			}
		}
	}
	want := fmt.Sprintf("%s CAA 0 issue %q", owner, canonical(ids[0]))
	fix := fmt.Sprintf("At your DNS provider, add the CAA record %s (keep the ones for other certificate authorities you still use), or remove the CAA records of %s that leave it out.",
		want, owner)

	var msg string
	switch {
	case len(critical) > 0:
		msg = fmt.Sprintf("The CAA records of %s include %s marked critical, which the certificate authority does not understand, so it may not issue a certificate for %s.",
			owner, strings.Join(critical, ", "), name)
		fix = fmt.Sprintf("At your DNS provider, remove the critical flag (128) from, or delete, the CAA record(s) of %s with tag %s.",
			owner, strings.Join(critical, ", "))
	case !hasIssue || allowed:
		return nil
	case len(issuers) == 0:
		msg = fmt.Sprintf("The CAA records of %s forbid every certificate authority from issuing certificates, so none can be issued for %s.", owner, name)
	default:
		msg = fmt.Sprintf("The CAA records of %s allow only %s to issue certificates, so the certificate authority this platform uses (%s) cannot issue one for %s.",
			owner, strings.Join(issuers, ", "), strings.Join(ids, ", "), name)
	}
	return []Finding{{
		Code:     CodeCAABlocksCA,
		Message:  msg,
		Fix:      fix,
		Found:    found,
		Expected: want,
	}}
}

// issuerDomain extracts the issuer-domain-name from an issue value
// ("letsencrypt.org; validationmethods=http-01"); "" means no CA at all.
func issuerDomain(value string) string {
	d, _, _ := strings.Cut(value, ";")
	return canonical(d)
}
