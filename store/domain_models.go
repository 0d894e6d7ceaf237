package store

import "time"

// The custom-domain types live here, beside the other stored entities, so
// that store, domains and handlers share one definition. Package domains
// fills them; their JSON form is the admin API's.

// DNSRecord is one DNS record the customer must create at their DNS provider.
type DNSRecord struct {
	// Type is CNAME, ALIAS (ALIAS/ANAME), A or AAAA.
	Type string `json:"type"`
	// Host is what most providers ask for in the "name" field: the labels
	// relative to the registrable domain ("shop", "a.b"), or "@" for the apex.
	Host string `json:"host"`
	// Name is the full domain name the record is for, without trailing dot.
	Name string `json:"name"`
	// Value is the record's content: the CNAME target or an address.
	Value string `json:"value"`
	// TTL in seconds.
	TTL int `json:"ttl"`
	// Note explains, in plain words, when and why to use this record.
	Note string `json:"note,omitempty"`
	// Fallback marks records to create only when the provider cannot do the
	// main one (A/AAAA in place of ALIAS at an apex).
	Fallback bool `json:"fallback"`
}

// Finding is one thing wrong with a domain's DNS, worded for the customer.
type Finding struct {
	// Code is one of the domains package's Code* constants.
	Code string `json:"code"`
	// Message says what was found, with the values.
	Message string `json:"message"`
	// Fix says what to do about it.
	Fix string `json:"fix"`
	// Found lists the offending records or values as found in DNS.
	Found []string `json:"found,omitempty"`
	// Expected is the value that would have been right, when there is one.
	Expected string `json:"expected,omitempty"`
	// Warning marks a finding that does not keep the domain from verifying.
	Warning bool `json:"warning,omitempty"`
}

// DomainCheck is the outcome of one DNS check of a domain.
type DomainCheck struct {
	// Verified is true when the domain points at the platform and CAA lets
	// the configured CA issue: a certificate can be requested now.
	Verified bool `json:"verified"`
	// CheckedAt is when the check started, in UTC.
	CheckedAt time.Time `json:"checkedAt"`
	// Authoritative is true when the answers came from the zone's own
	// nameservers, so they show the zone as it is now rather than as a
	// resolver cached it.
	Authoritative bool `json:"authoritative"`
	// Nameservers lists the zone's nameservers asked, when Authoritative.
	Nameservers []string `json:"nameservers,omitempty"`
	// ZoneApex is true when the name is a subdomain delegated as a zone of
	// its own (it has its own SOA): like a registrable domain, it cannot
	// carry a CNAME and was checked as an apex.
	ZoneApex bool `json:"zoneApex,omitempty"`
	// Findings holds only warnings when Verified.
	Findings []Finding `json:"findings"`
	// MaxTTL is the longest TTL, in seconds, of the records the check saw:
	// how long a resolver may keep showing what it saw before.
	MaxTTL int `json:"maxTTL,omitempty"`
}

// Domain states.
const (
	DomainPending  = "pending"
	DomainVerified = "verified"
	DomainMoved    = "moved"
)

// Certificate states.
const (
	CertNone    = "none"
	CertPending = "pending"
	CertIssued  = "issued"
	CertFailed  = "failed"
	// CertRenewing: the certificate is valid and a renewal is under way.
	CertRenewing = "renewing"
	// CertExpired: the certificate's notAfter has passed.
	CertExpired = "expired"
)

// Certificate lifecycle event kinds.
const (
	CertEventObtained = "obtained"
	CertEventRenewed  = "renewed"
	CertEventFailed   = "failed"
	CertEventRemoved  = "removed"
	// CertEventExpiring: the certificate in use is close to its notAfter
	// and no renewal has succeeded; recorded once per certificate.
	CertEventExpiring = "expiring"
)

// Certificate is what is known of a domain's TLS certificate.
type Certificate struct {
	State string `json:"state"`
	// Issuer is the issuing CA certificate's common name.
	Issuer string `json:"issuer,omitempty"`
	// IssuerCA is the ACME directory URL of the CA that issued it: with
	// several --acme-ca, the one that succeeded.
	IssuerCA  string     `json:"issuerCA,omitempty"`
	Serial    string     `json:"serial,omitempty"`
	Names     []string   `json:"names,omitempty"`
	NotBefore *time.Time `json:"notBefore,omitempty"`
	NotAfter  *time.Time `json:"notAfter,omitempty"`
	// RenewalDueAt is when renewal starts: the CA's ARI choice when it
	// offers one, else when a third of the lifetime is left.
	RenewalDueAt *time.Time `json:"renewalDueAt,omitempty"`
	Error        string     `json:"error,omitempty"`
	UpdatedAt    *time.Time `json:"updatedAt,omitempty"`
	// LastAttempt is the latest request to the CA, renewals included.
	LastAttempt *CertAttempt `json:"lastAttempt,omitempty"`
	// NextAttemptAt and NextAttemptReason are set while failed attempts
	// back off: when the next one starts and why it waits.
	NextAttemptAt     *time.Time `json:"nextAttemptAt,omitempty"`
	NextAttemptReason string     `json:"nextAttemptReason,omitempty"`
	// FailedAttempts counts the failed attempts in a row, for the back-off.
	FailedAttempts int `json:"failedAttempts,omitempty"`
	// FailedValidations holds the times of failed validations in the last
	// hour: CAs lock a name out after a few per hour.
	FailedValidations []time.Time `json:"failedValidations,omitempty"`
	// Events are the latest lifecycle events, oldest first.
	Events []CertEvent `json:"events,omitempty"`
	// ExpiringNotedAt is when the expiring event of the certificate in
	// use was recorded; a new certificate clears it. Events keeps only the
	// latest few, so this, not Events, says it was recorded.
	ExpiringNotedAt *time.Time `json:"expiringNotedAt,omitempty"`
}

// CertAttempt is one request to the CA.
type CertAttempt struct {
	At      time.Time `json:"at"`
	Renewal bool      `json:"renewal"`
	// Error is empty while the attempt runs and when it succeeded.
	Error string `json:"error,omitempty"`
}

// CertEvent is one lifecycle event of a domain's certificate.
type CertEvent struct {
	// Kind is one of the CertEvent* constants.
	Kind   string    `json:"kind"`
	At     time.Time `json:"at"`
	Detail string    `json:"detail,omitempty"`
}

// Domain is a custom domain attached to the project.
type Domain struct {
	// Name is the normalised name (lower case, punycode for IDNs): the key.
	Name string `json:"name"`
	// DisplayName is the Unicode form of an IDN, empty otherwise.
	DisplayName string     `json:"displayName,omitempty"`
	Apex        bool       `json:"apex"`
	State       string     `json:"state"`
	AddedAt     time.Time  `json:"addedAt"`
	VerifiedAt  *time.Time `json:"verifiedAt,omitempty"`
	// NextCheckAt is when the background check runs next; nil when it will not.
	NextCheckAt *time.Time `json:"nextCheckAt,omitempty"`
	// CheckAttempts counts background checks since the last change of state,
	// for the backoff; for a verified or moved domain, the checks in a row
	// whose lookups failed.
	CheckAttempts int          `json:"checkAttempts"`
	Records       []DNSRecord  `json:"records"`
	Check         *DomainCheck `json:"check,omitempty"`
	Certificate   Certificate  `json:"certificate"`

	// PointsElsewhereSince is the first of the consecutive checks that found
	// a verified or moved domain's DNS pointing away from the platform;
	// PointsElsewhereChecks counts them. Checks whose lookups failed neither
	// count nor break the run.
	PointsElsewhereSince  *time.Time `json:"pointsElsewhereSince,omitempty"`
	PointsElsewhereChecks int        `json:"pointsElsewhereChecks,omitempty"`
	// MovedAt is when the domain became moved; nil unless it is.
	MovedAt *time.Time `json:"movedAt,omitempty"`
}

// Redirect sends every request for From to To with Status.
type Redirect struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Status int    `json:"status"`
}

// DomainSettings is the settings key "domains".
type DomainSettings struct {
	Primary   string     `json:"primary,omitempty"`
	Redirects []Redirect `json:"redirects"`
}

// Settings are the project's settings that the admin API edits as a whole.
type Settings struct {
	Domains DomainSettings `json:"domains"`
}
