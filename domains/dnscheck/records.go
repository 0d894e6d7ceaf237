package dnscheck

import (
	"net/netip"
	"strings"

	"golang.org/x/net/idna"

	"petstore/store"
)

// Record types shown to customers. ALIAS stands for ALIAS, ANAME and
// "CNAME flattening", one thing under providers' names.
const (
	TypeCNAME = "CNAME"
	TypeALIAS = "ALIAS"
	TypeA     = "A"
	TypeAAAA  = "AAAA"
)

// RecordTTL spares the customer's provider while letting a mistake be
// fixed the same day.
const RecordTTL = 3600

// Record is one DNS record the customer must create at their DNS provider.
type Record = store.DNSRecord

// RequiredRecords lists the records that make name (as Normalize returns
// it) point at the platform: a CNAME for a subdomain; for an apex, which
// cannot have one, an ALIAS and, with the platform's public addresses
// configured, A/AAAA records for providers without ALIAS.
func RequiredRecords(name, cnameTarget string, publicIPs []netip.Addr) []Record {
	return Platform{CNAMETarget: cnameTarget, PublicIPs: publicIPs}.Records(name, IsApex(name))
}

// Records lists the records that make name point here; apex says whether
// name is its zone's apex, as a check may find: a subdomain may be a zone
// of its own.
func (p Platform) Records(name string, apex bool) []Record {
	name = Canonical(name)
	target := Canonical(p.CNAMETarget)
	if !apex {
		note := "Remove any A or AAAA record for this name first: a CNAME cannot sit beside other records. The value must match exactly."
		if IsWildcard(name) {
			note = "A wildcard record: it sends every name one label below " + WildcardBase(name) +
				" here, except names that have records of their own at your DNS provider. The value must match exactly."
		}
		return []Record{{Type: TypeCNAME, Host: relativeHost(name), Name: name, Value: target, TTL: RecordTTL, Note: note}}
	}

	otherwise := "use a subdomain such as www." + name + " with a CNAME record instead."
	if len(p.PublicIPs) > 0 {
		otherwise = "create the A/AAAA records below instead."
	}
	alias := Record{Type: TypeALIAS, Host: "@", Name: name, Value: target, TTL: RecordTTL,
		Note: "Your provider may call this ALIAS, ANAME or CNAME flattening. Not every DNS provider supports them; if yours does not, " + otherwise}
	if readable, err := idna.ToUnicode(name); err == nil && readable != name {
		alias.Note += " " + name + " is how DNS writes " + readable + "; use this form where your provider asks for the full name."
	}
	records := []Record{alias}
	for _, ip := range p.PublicIPs {
		ip = ip.Unmap()
		typ := TypeA
		if ip.Is6() {
			typ = TypeAAAA
		}
		records = append(records, Record{
			Type:     typ,
			Host:     "@",
			Name:     name,
			Value:    ip.String(),
			TTL:      RecordTTL,
			Note:     "Only if your DNS provider has no ALIAS or ANAME record. Create every address listed, and remove other A/AAAA records for this name.",
			Fallback: true,
		})
	}
	return records
}

// relativeHost returns the labels of name under its registrable domain, or
// "@" when name is the registrable domain (or has none).
func relativeHost(name string) string {
	reg := RegistrableDomain(name)
	if reg == "" || reg == name {
		return "@"
	}
	return strings.TrimSuffix(name, "."+reg)
}
