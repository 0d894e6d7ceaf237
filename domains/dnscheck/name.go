// Package dnscheck checks customers' DNS for their custom domains: the
// form of a name, the records to create, where the name points (asked of
// its authoritative servers), and CAA, with findings worded for the
// customer. The CAs it judges CAA against are given to it.
package dnscheck

import (
	"net"
	"net/netip"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"

	"petstore/store"
)

// idnaProfile maps like idna.Lookup but leaves "--" in positions 3-4 of a
// label alone: names such as "r3---sn-abc.example.com" exist and resolve.
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.CheckHyphens(false),
)

const (
	maxNameLen  = 253
	maxLabelLen = 63
)

// Normalize turns what a customer typed into the canonical form stored and
// compared everywhere: lower case, no trailing dot, IDN labels in punycode.
// It refuses with an EINVALID *store.Error, shown as is, what cannot be a
// customer's host name: IPs, URLs, ports, paths, wildcards (see
// NormalizeWildcard), bad or single labels, and names without a
// registrable domain, whose control no one can prove.
func Normalize(input string) (string, error) {
	s := strings.TrimSpace(input)
	if s == "" {
		return "", invalid("enter a domain name, such as shop.example.com")
	}
	if !utf8.ValidString(s) {
		return "", invalid("the name is not valid UTF-8 text")
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return "", invalid("%q contains spaces; enter just the domain name, such as shop.example.com", s)
	}
	if isIP(s) {
		return "", invalid("%q is an IP address; enter a domain name, such as shop.example.com, and point it at the platform with the DNS records shown", s)
	}
	if strings.Contains(s, "@") && !strings.Contains(s, "/") {
		return "", invalid("%q looks like an email address; enter just the domain name (for example shop.example.com)", s)
	}
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/?#@") {
		return "", invalid("%q looks like a URL; enter just the domain name, without https:// or a path (for example shop.example.com)", s)
	}
	if strings.Contains(s, ":") {
		return "", invalid("%q contains a port or a colon; enter just the domain name, without a port (for example shop.example.com)", s)
	}
	if strings.Contains(s, "*") {
		// Wildcards have rules of their own; where one is accepted the caller
		// asks for it.
		if _, err := NormalizeWildcard(s); err != nil {
			return "", err
		}
		return "", invalid("%q is a wildcard; a single domain name is needed here (for example shop.example.com)", s)
	}
	s = strings.TrimSuffix(s, ".")
	if s == "" || strings.HasPrefix(s, ".") || strings.Contains(s, "..") {
		return "", invalid("%q has an empty label (two dots in a row, or a leading dot); enter a name such as shop.example.com", strings.TrimSpace(input))
	}

	ascii, err := idnaProfile.ToASCII(s)
	if err != nil {
		return "", invalid("%q is not a valid domain name: use only letters, digits and hyphens in each part between dots", s)
	}
	ascii = strings.ToLower(ascii) // whatever the profile does with pure ASCII
	// Checked again after IDNA mapping: full-width digits and dots can turn
	// "１２７．０．０．１" into an address.
	if isIP(ascii) {
		return "", invalid("%q is an IP address; enter a domain name, such as shop.example.com", s)
	}
	if err := checkHostname(ascii); err != nil {
		return "", err
	}
	if !strings.Contains(ascii, ".") {
		return "", invalid("%q is a single label; enter a full domain name such as %s.com or shop.%s.com", s, s, s)
	}
	suffix, _ := publicsuffix.PublicSuffix(ascii)
	if suffix == ascii {
		return "", invalid("%q is a public suffix (like com or co.uk), which no single customer controls; enter your own domain, such as example.%s", ascii, ascii)
	}
	if _, err := publicsuffix.EffectiveTLDPlusOne(ascii); err != nil {
		return "", invalid("%q has no registrable domain; enter a domain you registered, such as example.com or shop.example.com", ascii)
	}
	return ascii, nil
}

// checkHostname applies the RFC 1123 host name rules to an ASCII name.
func checkHostname(name string) error {
	if len(name) > maxNameLen {
		return invalid("the domain name is %d characters long; the limit is %d", len(name), maxNameLen)
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		switch {
		case l == "":
			return invalid("%q has an empty label (two dots in a row)", name)
		case len(l) > maxLabelLen:
			return invalid("the part %q of %q is %d characters long; each part between dots may have at most %d", l, name, len(l), maxLabelLen)
		case l[0] == '-' || l[len(l)-1] == '-':
			return invalid("the part %q of %q starts or ends with a hyphen, which domain names do not allow", l, name)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return invalid("%q contains %q; domain names may use only letters, digits and hyphens", name, string(c))
			}
		}
	}
	// An all-numeric TLD is never a host name (RFC 3696 section 2) and is how
	// odd IPv4 spellings ("10.1", "1.2.3.4.5") show up.
	if tld := labels[len(labels)-1]; strings.Trim(tld, "0123456789") == "" {
		return invalid("%q is not a domain name: its last part is all digits, like an IP address", name)
	}
	return nil
}

func isIP(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if h, _, ok := strings.Cut(s, "]"); ok && strings.HasPrefix(h, "[") {
		s = h[1:]
	}
	_, err := netip.ParseAddr(s)
	return err == nil
}

func invalid(format string, args ...any) error {
	return store.Errorf(store.EINVALID, format, args...)
}

// RegistrableDomain returns the registrable part of a normalised name
// (public suffix plus one label), or "" when there is none.
func RegistrableDomain(name string) string {
	d, err := publicsuffix.EffectiveTLDPlusOne(Canonical(name))
	if err != nil {
		return ""
	}
	return d
}

// IsApex reports whether a normalised name is a registrable domain itself,
// which cannot carry a CNAME.
func IsApex(name string) bool {
	n := Canonical(name)
	return n != "" && RegistrableDomain(n) == n
}

// Platform describes the platform's own names, which customers must not
// attach: that would take over another project's traffic or the platform's.
type Platform struct {
	// Domain is the platform domain of default addresses (<slug>.<Domain>).
	Domain string
	// CNAMETarget is the host customers point their CNAME at; it may live
	// outside Domain, and is protected the same way.
	CNAMETarget string
	// PublicIPs are the platform's addresses an apex may use as A/AAAA; when
	// empty, an apex must resolve like CNAMETarget (a flattened ALIAS).
	PublicIPs []netip.Addr
}

// Owns reports whether name is or is under one of the platform's domains.
func (p Platform) Owns(name string) bool {
	n := Canonical(name)
	return n != "" && (isSubdomain(n, Canonical(p.Domain)) || isSubdomain(n, Canonical(p.CNAMETarget)))
}

// Normalize is the package Normalize that also refuses the platform's own
// names; adding a domain calls it.
func (p Platform) Normalize(input string) (string, error) {
	name, err := Normalize(input)
	if err != nil {
		return "", err
	}
	if p.Owns(name) {
		return "", invalid("%q belongs to the platform; add a domain you own, such as shop.example.com", name)
	}
	return name, nil
}

// Canonical is the cheap form for comparing normalised or DNS names: lower
// case without the trailing dot.
func Canonical(name string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), ".")
}

// HostName is the name a Host header asks for: without port, IPv6
// brackets and trailing dot, lower-cased. Every request and challenge
// calls it, hence the loops where strings functions would allocate.
func HostName(host string) string {
	if strings.IndexByte(host, ':') >= 0 { // SplitHostPort's error allocates
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
	}
	// strings.Trim builds its cutset on every call.
	for len(host) > 0 && (host[0] == '[' || host[0] == ']') {
		host = host[1:]
	}
	for n := len(host); n > 0 && (host[n-1] == '[' || host[n-1] == ']'); n = len(host) {
		host = host[:n-1]
	}
	host = strings.TrimSuffix(host, ".")
	for i := 0; i < len(host); i++ {
		if c := host[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(host)
		}
	}
	return host
}

// specialUseTLDs never lead to a public certificate (RFC 2606, 6761, 6762,
// 7686, 9476, 3172, and ICANN on .internal); each has its own reason. Other
// TLDs outside the public suffix list's ICANN section are refused too.
var specialUseTLDs = map[string]string{
	"localhost": "is reserved for this computer (RFC 6761)",
	"invalid":   "is reserved for names that must never resolve (RFC 6761)",
	"example":   "is reserved for documentation (RFC 2606)",
	"test":      "is reserved for testing (RFC 6761)",
	"local":     "is reserved for multicast DNS on local networks (RFC 6762)",
	"onion":     "is reserved for Tor onion services (RFC 7686)",
	"internal":  "is reserved for private networks (ICANN, 2024)",
	"alt":       "is reserved for non-DNS name systems (RFC 9476)",
	"arpa":      "is reserved for the Internet's infrastructure, such as reverse DNS (RFC 3172)",
}

// CheckPublicTLD refuses a normalised name whose TLD is special-use or not
// ICANN's, which would only send a doomed order to the CA. allowTest lets
// .test through.
func CheckPublicTLD(name string, allowTest bool) error {
	tld := name[strings.LastIndexByte(name, '.')+1:]
	if reason, ok := specialUseTLDs[tld]; ok {
		if tld == "test" && allowTest {
			return nil
		}
		return invalid("%q cannot get a public certificate: .%s %s; add a domain under a public top-level domain such as .com", name, tld, reason)
	}
	// Asked for the TLD alone so that a private-section suffix below it
	// (such as blogspot.com) does not count as non-ICANN.
	if _, icann := publicsuffix.PublicSuffix(tld); !icann {
		return invalid("%q cannot get a public certificate: .%s is not a top-level domain on the Internet; add a domain under a public top-level domain such as .com", name, tld)
	}
	return nil
}
