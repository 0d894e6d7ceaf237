package store

import "time"

// The custom-domain types, which package domains fills. Their JSON form is
// the admin API's: handlers/openapi-admin.yaml says what each field means.

// DNSRecord is one DNS record the customer must create at their DNS provider.
type DNSRecord struct {
	Type  string `json:"type"`
	Host  string `json:"host"`
	Name  string `json:"name"`
	Value string `json:"value"`
	// TTL in seconds.
	TTL      int    `json:"ttl"`
	Note     string `json:"note,omitempty"`
	Fallback bool   `json:"fallback"`
	Purpose  string `json:"purpose,omitempty"`
}

// The purposes of the records that move a live domain without downtime.
const (
	// RecordPurposeOwnership: the _petstore-challenge TXT that proves the
	// customer controls the name while its traffic still goes elsewhere.
	RecordPurposeOwnership = "ownership"
	// RecordPurposeDelegation: the _acme-challenge CNAME that lets this
	// service answer the CA's DNS-01 challenges for the name.
	RecordPurposeDelegation = "delegation"
)

// Finding is one thing wrong with a domain's DNS, worded for the customer.
type Finding struct {
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	Fix      string   `json:"fix"`
	Found    []string `json:"found,omitempty"`
	Expected string   `json:"expected,omitempty"`
	Warning  bool     `json:"warning,omitempty"`
}

// DomainCheck is the outcome of one DNS check of a domain.
type DomainCheck struct {
	Verified      bool      `json:"verified"`
	CheckedAt     time.Time `json:"checkedAt"`
	Authoritative bool      `json:"authoritative"`
	Nameservers   []string  `json:"nameservers,omitempty"`
	ZoneApex      bool      `json:"zoneApex,omitempty"`
	Findings      []Finding `json:"findings"`
	MaxTTL        int       `json:"maxTTL,omitempty"`
}

// Domain states.
const (
	DomainPending = "pending"
	// DomainOwned: the ownership TXT was found while the name's traffic
	// still goes elsewhere; its certificate may be obtained ahead of it.
	DomainOwned    = "owned"
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
	State             string       `json:"state"`
	Issuer            string       `json:"issuer,omitempty"`
	IssuerCA          string       `json:"issuerCA,omitempty"`
	Serial            string       `json:"serial,omitempty"`
	Names             []string     `json:"names,omitempty"`
	NotBefore         *time.Time   `json:"notBefore,omitempty"`
	NotAfter          *time.Time   `json:"notAfter,omitempty"`
	RenewalDueAt      *time.Time   `json:"renewalDueAt,omitempty"`
	Error             string       `json:"error,omitempty"`
	UpdatedAt         *time.Time   `json:"updatedAt,omitempty"`
	LastAttempt       *CertAttempt `json:"lastAttempt,omitempty"`
	NextAttemptAt     *time.Time   `json:"nextAttemptAt,omitempty"`
	NextAttemptReason string       `json:"nextAttemptReason,omitempty"`
	// FailedAttempts counts the failed attempts in a row, for the back-off.
	FailedAttempts    int         `json:"failedAttempts,omitempty"`
	FailedValidations []time.Time `json:"failedValidations,omitempty"`
	Events            []CertEvent `json:"events,omitempty"`
	// ExpiringNotedAt is when the expiring event of the certificate in
	// use was recorded; a new certificate clears it. Events keeps only the
	// latest few, so this, not Events, says it was recorded.
	ExpiringNotedAt *time.Time `json:"expiringNotedAt,omitempty"`
}

// CertAttempt is one request to the CA.
type CertAttempt struct {
	At      time.Time `json:"at"`
	Renewal bool      `json:"renewal"`
	Error   string    `json:"error,omitempty"`
}

// CertEvent is one lifecycle event of a domain's certificate.
type CertEvent struct {
	Kind   string    `json:"kind"`
	At     time.Time `json:"at"`
	Detail string    `json:"detail,omitempty"`
}

// Domain is a custom domain attached to the project.
type Domain struct {
	Name        string     `json:"name"`
	DisplayName string     `json:"displayName,omitempty"`
	Apex        bool       `json:"apex"`
	State       string     `json:"state"`
	AddedAt     time.Time  `json:"addedAt"`
	VerifiedAt  *time.Time `json:"verifiedAt,omitempty"`
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
	PointsElsewhereSince  *time.Time  `json:"pointsElsewhereSince,omitempty"`
	PointsElsewhereChecks int         `json:"pointsElsewhereChecks,omitempty"`
	MovedAt               *time.Time  `json:"movedAt,omitempty"`
	Delegation            *Delegation `json:"delegation,omitempty"`
}

// Delegation is what moving a live domain without downtime needs: a TXT
// record that proves ownership before traffic moves, and an _acme-challenge
// CNAME into the service's zone through which certificates are validated
// by DNS-01.
type Delegation struct {
	Token           string     `json:"token"`
	Target          string     `json:"target"`
	Label           string     `json:"label"`
	OwnershipFound  bool       `json:"ownershipFound"`
	Delegated       bool       `json:"delegated"`
	OwnedAt         *time.Time `json:"ownedAt,omitempty"`
	OwnershipLostAt *time.Time `json:"ownershipLostAt,omitempty"`
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
