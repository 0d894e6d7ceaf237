package dnscheck

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"petstore/store"
)

// Finding codes: the API and the dashboard key on these, so they never
// change once published.
const (
	CodeNoRecord          = "no_record"
	CodeConflictingRecord = "conflicting_record"
	CodeCNAMEMismatch     = "cname_mismatch"
	CodeApexNeedsAlias    = "apex_needs_alias"
	CodeCAABlocksCA       = "caa_blocks_ca"
	CodeDNSError          = "dns_error"
)

// DefaultTimeout bounds each DNS question when Checker.Timeout is zero;
// waiting longer only delays the "try again" the customer gets anyway.
const DefaultTimeout = 2 * time.Second

// Finding is one thing wrong with a domain's DNS, worded for the customer.
type Finding = store.Finding

// Result is the outcome of one Check.
type Result = store.DomainCheck

// Checker checks that a customer's domain points at the platform.
// Platform.CNAMETarget is required. Safe for concurrent use while its
// fields are not changed.
type Checker struct {
	// Resolvers (host:port, port 53 by default) find the zone's nameservers
	// and are asked directly when those cannot be reached. Empty means
	// /etc/resolv.conf's servers, else 127.0.0.1:53.
	Resolvers []string
	// Platform is where customers point their domains: the CNAME target and
	// the public addresses.
	Platform Platform
	// CAAIdentities are the issuer domain names the CA accepts in CAA issue
	// records (e.g. "letsencrypt.org"), replacing what CertificateAuthorities
	// announces. With none known, CAA records naming CAs only warn.
	CAAIdentities []string
	// CertificateAuthorities, when set, tells the CAA check which CAs
	// certificates come from; the name may issue when one of them may.
	CertificateAuthorities func(context.Context) []CertificateAuthority
	// ValidationMethods are the ACME challenge types this service answers;
	// empty means http-01 and tls-alpn-01.
	ValidationMethods []string
	// Timeout bounds each DNS question; zero means DefaultTimeout.
	Timeout time.Duration
	// NameserverPort is the port nameservers are asked on; zero means 53.
	NameserverPort int
	// AllowPrivateNameservers lets the check ask nameservers at loopback,
	// private or link-local addresses. Off, such a zone goes through the
	// resolvers only: NS records and glue are the customer's, who must not
	// aim the platform's queries into its network.
	AllowPrivateNameservers bool
}

// Check looks up name's DNS records (name as returned by Normalize) and
// says whether it is ready for a certificate, and if not, what is wrong.
// It asks the authoritative nameservers directly when it can, so that a
// record just fixed counts before resolver caches expire. DNS failures are
// a dns_error finding, never an error: the result is always showable.
func (c *Checker) Check(ctx context.Context, name string) Result {
	name = Canonical(name)
	res := Result{CheckedAt: time.Now().UTC(), Findings: []Finding{}}
	s := &session{c: c, resolvers: c.resolvers(), timeout: cmp.Or(c.Timeout, DefaultTimeout)}

	query := name
	if IsWildcard(name) {
		// A random label no one created shows where the wildcard points.
		query = probeLabel() + "." + WildcardBase(name)
	}
	s.discover(ctx, query)
	// A delegated subdomain with its own SOA is the apex of its zone: it
	// cannot hold a CNAME either.
	res.ZoneApex = s.foundZone == name && !IsApex(name)
	var findings []Finding
	if IsApex(name) || res.ZoneApex {
		findings = s.checkApex(ctx, name)
	} else {
		findings = s.checkSubdomain(ctx, query, name)
		for i := range findings {
			if query != name {
				findings[i].Message += fmt.Sprintf(" (Checked through %s, a name the wildcard covers.)", query)
			}
		}
	}
	// A CAA lookup would fail the same way and only repeat the message.
	if !slices.ContainsFunc(findings, func(f Finding) bool { return f.Code == CodeDNSError }) {
		findings = append(findings, s.checkCAA(ctx, name)...)
	}

	res.Findings = append(res.Findings, findings...)
	res.Verified = !slices.ContainsFunc(res.Findings, func(f Finding) bool { return !f.Warning })
	res.Authoritative = len(s.auth) > 0 && !s.fellBack.Load()
	res.MaxTTL = int(s.maxTTL.Load())
	if res.Authoritative {
		res.Nameservers = s.nsNames
	}
	return res
}

// checkSubdomain: a CNAME to the target and nothing beside it. query is
// the name asked: a wildcard is asked through a name it covers, which
// Check adds to the findings.
func (s *session) checkSubdomain(ctx context.Context, query, name string) []Finding {
	all, errs := s.answers(ctx, query, dns.TypeCNAME, dns.TypeA, dns.TypeAAAA)
	if f := dnsErrorFinding(name, errs); f != nil {
		return []Finding{*f}
	}
	target := Canonical(s.c.Platform.CNAMETarget)
	host := relativeHost(name)
	cname := cnameOf(all, query)
	own := ownAddrRecords(all, query)

	var out []Finding
	switch {
	case cname == "" && len(own) == 0:
		out = append(out, Finding{
			Code:    CodeNoRecord,
			Message: fmt.Sprintf("No DNS record was found for %s yet.", name),
			Fix: fmt.Sprintf("At your DNS provider, create a CNAME record with name %s and value %s (TTL 3600). "+
				"DNS changes can take up to 48 hours to propagate, though most show within minutes; then choose Verify again.", host, target),
			Expected: "CNAME " + target,
		})
	case cname == "":
		out = append(out, Finding{
			Code: CodeConflictingRecord,
			Message: fmt.Sprintf("%s has %s instead of a CNAME record. An existing A or AAAA record blocks the CNAME.",
				name, describeRecords(own)),
			Fix: fmt.Sprintf("At your DNS provider, delete the A and AAAA records for %s, then create a CNAME record with name %s and value %s.",
				host, host, target),
			Found:    recordStrings(own),
			Expected: "CNAME " + target,
		})
	default:
		if len(own) > 0 {
			out = append(out, Finding{
				Code: CodeConflictingRecord,
				Message: fmt.Sprintf("%s has %s beside its CNAME record. A CNAME must be the only record for a name, so these conflict with it.",
					name, describeRecords(own)),
				Fix:      fmt.Sprintf("At your DNS provider, delete the A and AAAA records for %s and keep only the CNAME record.", host),
				Found:    recordStrings(own),
				Expected: "CNAME " + target,
			})
		}
		if cname != target {
			out = append(out, Finding{
				Code: CodeCNAMEMismatch,
				Message: fmt.Sprintf("The CNAME record for %s points to %s, but it must point to %s exactly.",
					name, cname, target),
				Fix:      fmt.Sprintf("At your DNS provider, change the value of the CNAME record %s to %s.", host, target),
				Found:    []string{cname},
				Expected: target,
			})
		}
	}
	return out
}

// checkApex: the apex's addresses must be the platform's, which is what an
// ALIAS/ANAME to the target (or the fallback A/AAAA records) produces.
func (s *session) checkApex(ctx context.Context, name string) []Finding {
	all, errs := s.answers(ctx, name, dns.TypeA, dns.TypeAAAA)
	if f := dnsErrorFinding(name, errs); f != nil {
		return []Finding{*f}
	}
	target := Canonical(s.c.Platform.CNAMETarget)

	// Some providers allow a CNAME at the apex. It breaks the zone's other
	// records, but it does route here, so only its value is judged.
	if cname := cnameOf(all, name); cname != "" {
		if cname == target {
			return nil
		}
		return []Finding{{
			Code: CodeCNAMEMismatch,
			Message: fmt.Sprintf("%s has a CNAME record pointing to %s, but it must point to %s exactly.",
				name, cname, target),
			Fix: fmt.Sprintf("At your DNS provider, replace the CNAME record at @ with an ALIAS or ANAME record pointing to %s%s.",
				target, s.fallbackAdvice()),
			Found:    []string{cname},
			Expected: target,
		}}
	}

	own := ownAddrRecords(all, name)
	if len(own) == 0 {
		return []Finding{{
			Code:    CodeNoRecord,
			Message: fmt.Sprintf("No DNS record was found for %s yet.", name),
			Fix: fmt.Sprintf("At your DNS provider, create an ALIAS or ANAME record at @ pointing to %s%s. "+
				"DNS changes can take up to 48 hours to propagate, though most show within minutes; then choose Verify again.",
				target, s.fallbackAdvice()),
			Expected: "ALIAS " + target,
		}}
	}

	// The apex's addresses must lie within the platform's: --public-ip and the
	// ALIAS target's A/AAAA records (what a flattened ALIAS shows). The target
	// is looked up only when the public addresses do not cover the apex.
	foreign := foreignAddrs(own, s.c.Platform.PublicIPs)
	if len(foreign) > 0 {
		targetAddrs, errs := s.lookupAddrs(ctx, target)
		if f := dnsErrorFinding(target, errs); f != nil {
			return []Finding{*f}
		}
		foreign = foreignAddrs(own, append(slices.Clone(s.c.Platform.PublicIPs), targetAddrs...))
	}
	if len(foreign) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%s points to %s, which is not this platform's address.", name, strings.Join(foreign, ", "))
	if len(foreign) > 1 {
		msg = fmt.Sprintf("%s points to %s, which are not this platform's addresses.", name, strings.Join(foreign, ", "))
	}
	return []Finding{{
		Code:    CodeApexNeedsAlias,
		Message: msg,
		Fix: fmt.Sprintf("At your DNS provider, delete the A and AAAA records at @ and create an ALIAS or ANAME record pointing to %s%s.",
			target, s.fallbackAdvice()),
		Found:    recordStrings(own),
		Expected: "ALIAS " + target,
	}}
}

// foreignAddrs lists own's A/AAAA addresses that are not in want.
func foreignAddrs(own []dns.RR, want []netip.Addr) []string {
	var foreign []string
	for _, rr := range own {
		ip, _ := rrAddr(rr)
		if !slices.ContainsFunc(want, func(w netip.Addr) bool { return w.Unmap() == ip }) {
			foreign = append(foreign, ip.String())
		}
	}
	return foreign
}

// fallbackAdvice completes an apex fix with what to do without ALIAS.
func (s *session) fallbackAdvice() string {
	if len(s.c.Platform.PublicIPs) == 0 {
		return "; if your provider supports neither, use a subdomain such as www with a CNAME record instead"
	}
	var ips []string
	for _, ip := range s.c.Platform.PublicIPs {
		ips = append(ips, ip.Unmap().String())
	}
	return "; if your provider supports neither, create A/AAAA records at @ for " + strings.Join(ips, " and ") + " instead"
}

func ownAddrRecords(rrs []dns.RR, owner string) []dns.RR {
	return append(ownedBy(rrs, owner, dns.TypeA), ownedBy(rrs, owner, dns.TypeAAAA)...)
}

// recordStrings renders A/AAAA records as "A 192.0.2.1".
func recordStrings(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		if ip, ok := rrAddr(rr); ok {
			out = append(out, dns.TypeToString[rr.Header().Rrtype]+" "+ip.String())
		}
	}
	return out
}

func describeRecords(rrs []dns.RR) string {
	list := recordStrings(rrs)
	if len(list) == 1 {
		return "an " + list[0] + " record"
	}
	return "the records " + strings.Join(list, ", ")
}

// dnsErrorFinding turns failed lookups into one dns_error finding, or nil
// when none failed.
func dnsErrorFinding(name string, errs []error) *Finding {
	var found []string
	var reason string
	for _, err := range errs {
		if err == nil {
			continue
		}
		found = append(found, err.Error())
		if reason == "" {
			reason = plainDNSError(err)
		}
	}
	if len(found) == 0 {
		return nil
	}
	fix := "This is usually temporary: try again in a few minutes. If it keeps failing, " +
		"check at your registrar that the domain's nameservers are set and working."
	if reason == cnameLoopReason {
		fix = "Change the CNAME records so that the chain ends at a name with addresses, without coming back to a name in it; a CNAME straight to the target named above needs no chain."
	}
	return &Finding{Code: CodeDNSError, Message: fmt.Sprintf("Looking up %s failed: %s.", name, reason), Fix: fix, Found: found}
}

const cnameLoopReason = "its CNAME records loop, or form a chain too long to follow"

func plainDNSError(err error) string {
	var rc *rcodeError
	var ne net.Error
	switch {
	case errors.As(err, &rc):
		switch rc.rcode {
		case dns.RcodeServerFailure:
			return "the DNS server reported a failure (SERVFAIL)"
		case dns.RcodeRefused:
			return "the DNS server refused to answer (REFUSED)"
		default:
			return "the DNS server answered " + dns.RcodeToString[rc.rcode]
		}
	case errors.Is(err, errCNAMELoop):
		return cnameLoopReason
	case errors.Is(err, context.Canceled):
		return "the check was cancelled"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return "no DNS server answered in time"
	default:
		return "no DNS server could be reached"
	}
}
