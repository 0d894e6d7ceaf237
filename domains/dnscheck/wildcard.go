// Wildcard domains: "*.shop.example.com" covers every name one label below
// shop.example.com. Their form's rules live here.

package dnscheck

import (
	"crypto/rand"
	"encoding/hex"
	"strings"

	"golang.org/x/net/publicsuffix"

	"petstore/store"
)

// wildcardPrefix is the one label a wildcard domain may start with.
const wildcardPrefix = "*."

// IsWildcard reports whether a normalised name is a wildcard domain.
func IsWildcard(name string) bool { return strings.HasPrefix(name, wildcardPrefix) }

// WildcardBase is the name a wildcard covers the children of, and name
// itself for any other name.
func WildcardBase(name string) string { return strings.TrimPrefix(name, wildcardPrefix) }

// RecordName is the name a domain's _petstore-challenge and
// _acme-challenge records are created under: a wildcard's base, since a CA
// validates "*.X" at _acme-challenge.X (RFC 8555 section 8.4).
func RecordName(name string) string { return WildcardBase(Canonical(name)) }

// LooksLikeWildcard reports whether what a customer typed starts, after
// spaces, with "*".
func LooksLikeWildcard(input string) bool {
	return strings.HasPrefix(strings.TrimSpace(input), "*")
}

// NormalizeWildcard turns what a customer typed into "*." followed by a
// name Normalize accepts. It refuses a "*" anywhere but as the whole first
// label, since a wildcard certificate covers exactly one label (RFC 6125
// section 6.4.3), and a wildcard of a public suffix, which would cover
// many owners' domains.
func NormalizeWildcard(input string) (string, error) {
	s := strings.TrimSpace(input)
	rest, ok := strings.CutPrefix(s, wildcardPrefix)
	if !ok || strings.Contains(rest, "*") {
		return "", invalid("%q is not a wildcard domain: a wildcard is written *.shop.example.com, with * as the whole first label and nowhere else, and covers the names one label below shop.example.com", s)
	}
	base, err := Normalize(rest)
	if err != nil {
		if b := strings.ToLower(strings.TrimSuffix(rest, ".")); b != "" && !isIP(b) {
			if suffix, _ := publicsuffix.PublicSuffix(b); suffix == b {
				return "", invalid("%q is a wildcard of the public suffix %s, which would cover the domains of many owners; add a wildcard under a domain you registered, such as *.shop.example.com", s, b)
			}
		}
		return "", invalid("the wildcard %q: %s", s, lowerFirst(store.ErrorMessage(err)))
	}
	name := wildcardPrefix + base
	if len(name) > maxNameLen {
		return "", invalid("the wildcard domain is %d characters long; the limit is %d", len(name), maxNameLen)
	}
	return name, nil
}

// NormalizeWildcard is the package NormalizeWildcard that also refuses
// wildcards under the platform's names or covering one of them.
func (p Platform) NormalizeWildcard(input string) (string, error) {
	name, err := NormalizeWildcard(input)
	if err != nil {
		return "", err
	}
	base := WildcardBase(name)
	if p.Owns(base) {
		return "", invalid("%q is under a name that belongs to the platform; add a wildcard of a domain you own, such as *.shop.example.com", name)
	}
	for _, own := range []string{Canonical(p.Domain), Canonical(p.CNAMETarget)} {
		if own != "" && Covers(name, own) {
			return "", invalid("%q would cover %s, which belongs to the platform; add a wildcard of a domain you own, such as *.shop.example.com", name, own)
		}
	}
	return name, nil
}

// Covers reports whether wildcard covers host: host is exactly one label
// below its base (RFC 6125 section 6.4.3).
func Covers(wildcard, host string) bool {
	base, ok := strings.CutPrefix(wildcard, wildcardPrefix)
	if !ok {
		return false
	}
	label, parent, ok := strings.Cut(host, ".")
	return ok && parent == base && label != "" && label != "*"
}

// lowerFirst lets a sentence of Normalize's continue another one.
func lowerFirst(s string) string {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// probeLabel is a label no customer created, so that only the wildcard
// record answers for it.
func probeLabel() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "petstore-probe-" + hex.EncodeToString(b)
}
