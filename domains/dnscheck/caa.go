package dnscheck

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/miekg/dns"
)

// CodeCAAUnchecked is a warning: CAA records name certificate authorities,
// and the check does not know which name its own CA goes by.
const CodeCAAUnchecked = "caa_unchecked"

// defaultValidationMethods are the ACME challenge types this service answers.
var defaultValidationMethods = []string{"http-01", "tls-alpn-01"}

// wildcardValidationMethods: a CA validates a wildcard through DNS only
// (RFC 8555 section 7.1.3).
var wildcardValidationMethods = []string{"dns-01"}

// CertificateAuthority is what the CAA check knows of one ACME CA that
// certificates come from.
type CertificateAuthority struct {
	// Identities are the issuer domain names the CA recognises in CAA
	// records (meta.caaIdentities); empty when unknown.
	Identities []string
	// AccountURI is this service's account URL at the CA, what an RFC 8657
	// accounturi must be; "" while no account exists.
	AccountURI string
}

// caaAuthorities returns the CAs to judge CAA records for, the operator's
// CAAIdentities replacing the identities the CAs announce.
func (c *Checker) caaAuthorities(ctx context.Context) []CertificateAuthority {
	var cas []CertificateAuthority
	if c.CertificateAuthorities != nil {
		cas = slices.Clone(c.CertificateAuthorities(ctx))
	}
	if len(c.CAAIdentities) > 0 {
		if len(cas) == 0 {
			cas = []CertificateAuthority{{}}
		}
		for i := range cas {
			cas[i].Identities = c.CAAIdentities
		}
	}
	return cas
}

// checkCAA judges the CAA records of a name as the CA will (RFC 8659, RFC
// 8657, and Boulder where the RFCs leave a choice). For "*.X" the climb
// starts at X (RFC 8659 section 3), issuewild records replace issue
// records where there are any (section 4.3), and only dns-01 validates.
func (s *session) checkCAA(ctx context.Context, name string) []Finding {
	step, rrs, err := s.relevantCAA(ctx, WildcardBase(name))
	if err != nil {
		f := dnsErrorFinding(step, []error{err})
		f.Message = fmt.Sprintf("Looking up the CAA records of %s failed: %s. Certificate authorities refuse to issue while CAA records cannot be read (Let's Encrypt does), so no certificate can be issued for %s until this lookup succeeds.",
			step, plainDNSError(err), name)
		return []Finding{*f}
	}
	if len(rrs) == 0 {
		return nil // RFC 8659 section 3: no CAA records anywhere up the tree, any CA may issue
	}
	methods := s.c.ValidationMethods
	if len(methods) == 0 {
		methods = defaultValidationMethods
	}
	if IsWildcard(name) {
		methods = wildcardValidationMethods
	}
	return judgeCAA(name, rrs, s.c.caaAuthorities(ctx), methods)
}

// relevantCAA finds RFC 8659's Relevant RRset: the name's CAA records,
// else its parent's, up to the TLD, following CNAMEs. Like Boulder it asks
// all steps at once and fails on a failed lookup below the first step with
// records (records could hide behind it); step names it. NXDOMAIN at a TLD
// is no failure: TLDs were checked when the domain was added.
func (s *session) relevantCAA(ctx context.Context, name string) (step string, rrs []*dns.CAA, err error) {
	// At most 127 labels in a checked name: so many lookups at most.
	labels := strings.Split(name, ".")
	type answer struct {
		rrs []*dns.CAA
		err error
	}
	answers := make([]answer, len(labels))
	var wg sync.WaitGroup
	for i := range labels {
		wg.Go(func() {
			found, err := s.rrset(ctx, strings.Join(labels[i:], "."), dns.TypeCAA)
			for _, rr := range found {
				if caa, ok := rr.(*dns.CAA); ok {
					answers[i].rrs = append(answers[i].rrs, caa)
				}
			}
			answers[i].err = err
		})
	}
	wg.Wait()
	for i, a := range answers {
		step = strings.Join(labels[i:], ".")
		if a.err != nil {
			return step, nil, a.err
		}
		if len(a.rrs) > 0 {
			return step, a.rrs, nil
		}
	}
	return "", nil, nil
}

// caaString renders a CAA record as a DNS provider shows it.
func caaString(owner string, flag uint8, tag, value string) string {
	return fmt.Sprintf("%s CAA %d %s %q", owner, flag, tag, value)
}

func caaRecordString(rr *dns.CAA) string {
	return caaString(Canonical(rr.Hdr.Name), rr.Flag, rr.Tag, rr.Value)
}

// caaCritical is the critical flag (RFC 8659 section 4.1). Boulder also
// takes the lowest bit for it, as many zones set 1 meaning "critical".
const caaCritical = 128 | 1

// judgeCAA applies the Relevant RRset rrs to name for the CAs cas.
func judgeCAA(name string, rrs []*dns.CAA, cas []CertificateAuthority, methods []string) []Finding {
	owner := Canonical(rrs[0].Hdr.Name)
	var issue, issuewild, critical []*dns.CAA
	for _, rr := range rrs {
		// Property tags are case-insensitive (RFC 8659 section 4.1).
		switch strings.ToLower(rr.Tag) {
		case "issue":
			issue = append(issue, rr)
		case "issuewild":
			issuewild = append(issuewild, rr)
		case "iodef":
			// iodef asks for reports, not restrictions.
		default:
			// Boulder knows no other property: each is unknown to it.
			if rr.Flag&caaCritical != 0 {
				critical = append(critical, rr)
			}
		}
	}

	// RFC 8659 section 4.3: issuewild is ignored for a name that is not a
	// wildcard, and for a wildcard replaces issue when there is any.
	tag := "issue"
	if IsWildcard(name) {
		tag = "issuewild" // a record that allows the wildcard and nothing else
		if len(issuewild) > 0 {
			issue = issuewild
		}
	}
	var out []Finding
	if len(critical) > 0 {
		out = append(out, criticalFinding(name, owner, critical, cas))
	}
	if len(issue) == 0 {
		// RFC 8659 section 4.2: only issue properties restrict a non-wildcard.
		return out
	}

	known := slices.DeleteFunc(slices.Clone(cas), func(ca CertificateAuthority) bool { return len(ca.Identities) == 0 })
	if len(known) == 0 {
		return append(out, unknownCAFinding(name, owner, issue))
	}

	var reasons []string
	var near *caaFix // a record meant for the platform's CA, and how to mend it
	for _, rr := range issue {
		reason, fix := judgeIssue(rr, known, methods)
		if reason == "" {
			return out // this record lets the CA issue
		}
		reasons = append(reasons, reason)
		if fix != nil && near == nil {
			near = fix
		}
	}
	return append(out, issueFinding(name, owner, tag, issue, known, reasons, near))
}

// caaFix is the issue value that would allow issuance in place of the
// record from, which was meant to.
type caaFix struct{ from, tag, value string }

// judgeIssue says why the issue record rr does not let any of the CAs issue
// ("" when it does), and how to mend it when it names one of them.
func judgeIssue(rr *dns.CAA, cas []CertificateAuthority, methods []string) (string, *caaFix) {
	text := caaRecordString(rr)
	domain, params, err := parseIssueValue(rr.Value)
	if domain == "" {
		// RFC 8659 section 4.2: an empty issuer domain name authorises no CA.
		return text + " allows no certificate authority", nil
	}
	var reasons []string
	var fix *caaFix
	for _, ca := range cas {
		for _, id := range ca.Identities {
			if domain != id {
				// Boulder compares the issuer domain name byte for byte: no
				// case folding, no trailing dot.
				if Canonical(domain) == Canonical(id) {
					reasons = append(reasons, fmt.Sprintf("%s names %q, but the certificate authority accepts only the exact spelling %q", text, domain, id))
					fix = mendIssue(rr, id, params, ca, methods)
				}
				continue
			}
			if err != nil {
				// Boulder skips a record whose parameters do not parse.
				reasons = append(reasons, fmt.Sprintf("%s has a malformed parameter (%v), so the certificate authority ignores it", text, err))
				fix = mendIssue(rr, id, nil, ca, methods)
				continue
			}
			why := paramsBlock(params, ca, methods)
			if why == "" {
				return "", nil
			}
			reasons = append(reasons, text+" "+why)
			fix = mendIssue(rr, id, params, ca, methods)
		}
	}
	if len(reasons) == 0 {
		return fmt.Sprintf("%s names another certificate authority (%s)", text, domain), nil
	}
	return strings.Join(reasons, "; "), fix
}

// paramsBlock applies the RFC 8657 parameters of a record naming ca; ""
// means they let this service's certificates through.
func paramsBlock(params map[string]string, ca CertificateAuthority, methods []string) string {
	// Boulder looks parameters up by exact tag and ignores unknown ones.
	if uri, ok := params["accounturi"]; ok {
		switch {
		case ca.AccountURI == "":
			// The account to be created gets a URI the record cannot name; Boulder,
			// asked without an account, skips such records too.
			return fmt.Sprintf("limits issuance to the ACME account %s, and this platform has no account with %s yet (it is created with the first certificate; check again afterwards)", uri, ca.Identities[0])
		case uri != ca.AccountURI:
			return fmt.Sprintf("limits issuance to the ACME account %s, but this platform's account is %s", uri, ca.AccountURI)
		}
	}
	if list, ok := params["validationmethods"]; ok && !methodsAllow(list, methods) {
		for _, m := range strings.Split(list, ",") {
			if !validationMethodPattern.MatchString(m) {
				return fmt.Sprintf("lists the malformed validation method %q (letters, digits and hyphens only), so the certificate authority ignores the whole record", m)
			}
		}
		return fmt.Sprintf("allows only the validation methods %s, but this platform proves control of a domain with %s", list, strings.Join(methods, " or "))
	}
	return ""
}

var validationMethodPattern = regexp.MustCompile(`^[[:alnum:]-]+$`)

// methodsAllow applies a validationmethods value (RFC 8657 section 4) as
// Boulder does: one malformed entry voids the record, unknown ones are
// skipped. The CA tries another challenge type after a failed one, so one
// allowed method of those this service answers is enough.
func methodsAllow(list string, methods []string) bool {
	ok := false
	for _, m := range strings.Split(list, ",") {
		if !validationMethodPattern.MatchString(m) {
			return false
		}
		ok = ok || slices.Contains(methods, m)
	}
	return ok
}

// parseIssueValue splits an issue value into the issuer domain name and
// its parameters (RFC 8659 section 4.2) as Boulder does: only spaces and
// tabs are trimmed, and one bad parameter voids the record (err).
func parseIssueValue(value string) (string, map[string]string, error) {
	isWSP := func(r rune) bool { return r == ' ' || r == '\t' }
	parts := strings.Split(value, ";")
	domain := strings.TrimFunc(parts[0], isWSP)
	params := map[string]string{}
	rest := parts[1:]
	if len(rest) == 1 && strings.TrimFunc(rest[0], isWSP) == "" {
		return domain, params, nil // "ca.example;" has no parameters
	}
	for _, p := range rest {
		tag, val, ok := strings.Cut(p, "=")
		if !ok {
			return domain, nil, fmt.Errorf("%q is not tag=value", strings.TrimFunc(p, isWSP))
		}
		tag, val = strings.TrimFunc(tag, isWSP), strings.TrimFunc(val, isWSP)
		for _, r := range tag {
			if !('0' <= r && r <= '9' || 'A' <= r && r <= 'Z' || 'a' <= r && r <= 'z') {
				return domain, nil, fmt.Errorf("the tag %q has a character other than a letter or digit", tag)
			}
		}
		for _, r := range val {
			if r < 0x21 || r > 0x7e {
				return domain, nil, fmt.Errorf("the value %q has a space or a character that is not printable ASCII", val)
			}
		}
		params[tag] = val
	}
	return domain, params, nil
}

// mendIssue is rr rewritten to let ca issue: exact issuer name, this
// service's account and validation methods where the record names them.
func mendIssue(rr *dns.CAA, id string, params map[string]string, ca CertificateAuthority, methods []string) *caaFix {
	value := id
	for _, tag := range slices.Sorted(maps.Keys(params)) {
		v := params[tag]
		switch tag {
		case "accounturi":
			if ca.AccountURI == "" {
				continue
			}
			v = ca.AccountURI
		case "validationmethods":
			if methodsAllow(v, methods) {
				break
			}
			v = strings.Join(methods, ",")
		}
		value += "; " + tag + "=" + v
	}
	return &caaFix{from: caaRecordString(rr), tag: rr.Tag, value: value}
}

// IssuerNames lists, each once, the issuer domain names a CAA record must
// name for the CAs certificates come from.
func (c *Checker) IssuerNames(ctx context.Context) []string {
	return caaIdentities(c.caaAuthorities(ctx))
}

// caaIdentities lists the issuer domain names of cas, each once.
func caaIdentities(cas []CertificateAuthority) []string {
	var ids []string
	for _, ca := range cas {
		for _, id := range ca.Identities {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

func caaStrings(rrs []*dns.CAA) []string {
	var out []string
	for _, rr := range rrs {
		out = append(out, caaRecordString(rr))
	}
	return out
}

// criticalFinding: RFC 8659 section 4.1, a CA must not issue when the
// Relevant RRset has a critical property it does not understand.
func criticalFinding(name, owner string, critical []*dns.CAA, cas []CertificateAuthority) Finding {
	var tagList []string
	for _, rr := range critical {
		tagList = append(tagList, rr.Tag)
	}
	tags := strings.Join(slices.Compact(tagList), ", ")
	first := critical[0]
	allow := caaString(owner, 0, first.Tag, first.Value)
	refused := fmt.Sprintf("The CAA record %s is marked critical (flag %d) with the property %s, which the certificate authority does not understand, so it refuses every certificate for %s.",
		caaRecordString(first), first.Flag, tags, name)
	msg := fmt.Sprintf("%s The same record with flag 0, %s, would not block it.", refused, allow)
	fix := fmt.Sprintf("At your DNS provider, change the flag of the CAA record(s) of %s with tag %s to 0 (%s), or delete them.", owner, tags, allow)
	if reg, above := aboveCustomer(name, owner); above {
		// Any record of the customer's domain replaces the TLD's.
		allow = caaString(reg, 0, "iodef", "mailto:hostmaster@"+reg)
		for _, ca := range cas {
			if len(ca.Identities) > 0 {
				allow = caaString(reg, 0, "issue", ca.Identities[0])
				break
			}
		}
		msg = fmt.Sprintf("%s Any CAA record of %s, such as %s, would take its place.", refused, reg, allow)
		fix = fmt.Sprintf("%s is above your domain, where you cannot change its records; at your DNS provider, add a CAA record to %s, for example %s: the records closest to the name are the ones that count.",
			owner, reg, allow)
	}
	return Finding{Code: CodeCAABlocksCA, Message: msg, Fix: fix, Found: caaStrings(critical), Expected: allow}
}

// issueFinding: the issue records exist and none lets the CAs issue.
func issueFinding(name, owner, tag string, issue []*dns.CAA, cas []CertificateAuthority, reasons []string, near *caaFix) Finding {
	ids := strings.Join(caaIdentities(cas), ", ")
	value := cas[0].Identities[0]
	if near != nil {
		value, tag = near.value, near.tag
	}
	allow := caaString(owner, 0, tag, value)
	fix := fmt.Sprintf("At your DNS provider, add the CAA record %s (keep the ones for other certificate authorities you still use), or remove the CAA records of %s that leave it out.",
		allow, owner)
	if near != nil {
		fix = fmt.Sprintf("At your DNS provider, change the CAA record %s to %s.", near.from, allow)
	}
	if reg, above := aboveCustomer(name, owner); above {
		// Records of the customer's own domain come first and replace the TLD's.
		allow = caaString(reg, 0, tag, value)
		fix = fmt.Sprintf("%s is above your domain, where you cannot change its records; at your DNS provider, add the CAA record %s: the records closest to the name are the ones that count.",
			owner, allow)
	}

	named := namedIssuers(issue)
	var msg string
	switch {
	case near != nil:
		msg = fmt.Sprintf("The CAA records of %s do not let %s issue a certificate for %s: %s. The record %s would.",
			owner, ids, name, strings.Join(reasons, "; "), allow)
	case len(named) == 0:
		msg = fmt.Sprintf("The CAA records of %s forbid every certificate authority from issuing certificates, so none can be issued for %s (%s). The record %s would allow %s.",
			owner, name, strings.Join(reasons, "; "), allow, ids)
	default:
		msg = fmt.Sprintf("The CAA records of %s allow only %s to issue certificates, so the certificate authority this platform uses (%s) cannot issue one for %s. The record %s would allow it.",
			owner, strings.Join(named, ", "), ids, name, allow)
	}
	return Finding{Code: CodeCAABlocksCA, Message: msg, Fix: fix, Found: caaStrings(issue), Expected: allow}
}

// namedIssuers lists the issuer names the usable records of issue name.
func namedIssuers(issue []*dns.CAA) []string {
	var named []string
	for _, rr := range issue {
		if d, _, err := parseIssueValue(rr.Value); err == nil && d != "" {
			named = append(named, d)
		}
	}
	return slices.Compact(named)
}

// aboveCustomer reports whether owner is an ancestor of name's registrable
// domain (a public suffix), and returns that domain.
func aboveCustomer(name, owner string) (string, bool) {
	reg := RegistrableDomain(name)
	return reg, reg != "" && owner != reg && isSubdomain(reg, owner)
}

// unknownCAFinding judges issue records without the CA's identity: ones
// allowing no CA block, ones naming CAs warn.
func unknownCAFinding(name, owner string, issue []*dns.CAA) Finding {
	named := namedIssuers(issue)
	if len(named) == 0 {
		return Finding{
			Code: CodeCAABlocksCA,
			Message: fmt.Sprintf("The CAA records of %s forbid every certificate authority from issuing certificates, so none can be issued for %s.",
				owner, name),
			Fix: fmt.Sprintf("At your DNS provider, delete the CAA records of %s that allow no certificate authority (%s), or replace them with one naming the certificate authority this platform uses.",
				owner, strings.Join(caaStrings(issue), ", ")),
			Found: caaStrings(issue),
		}
	}
	return Finding{
		Code:    CodeCAAUnchecked,
		Warning: true,
		Message: fmt.Sprintf("The CAA records of %s allow only %s to issue certificates for %s. This platform does not know the name its certificate authority uses in CAA records, so it cannot tell whether that authority is among them; if it is not, no certificate can be issued.",
			owner, strings.Join(named, ", "), name),
		Fix: fmt.Sprintf("If the certificate does not arrive, ask the platform's operator which certificate authority it uses, and add a CAA record %s for it beside these.",
			caaString(owner, 0, "issue", "<its domain>")),
		Found: caaStrings(issue),
	}
}
