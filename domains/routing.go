package domains

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"petstore/domains/certs"
	"petstore/domains/dnscheck"
	"petstore/store"
)

// Decision is what a request's Host gets.
type Decision int

// The decisions, from nothing to everything.
const (
	// Unknown: a Host this service does not serve (421, or a failed handshake).
	Unknown Decision = iota
	// Redirect: a redirect source; Route.To and Route.Status say where.
	Redirect
	// ServePublic: a verified customer domain; the site and the API only.
	ServePublic
	// ServeAll: the default address, localhost and loopback addresses;
	// site, API, admin API and dashboard.
	ServeAll
)

// Route is the routing decision for one Host.
type Route struct {
	Decision Decision
	// To and Status are set for Redirect.
	To     string
	Status int
}

// routingTable is an immutable snapshot of what is served where, swapped
// whole on every change so that the per-request decision takes no lock.
type routingTable struct {
	defaultAddr string
	served      map[string]bool // verified, or moved but still holding a certificate
	certAllowed map[string]bool // names the decision function lets certmagic serve
	redirects   map[string]store.Redirect
	// issued holds the attached domains whose record says a certificate
	// was obtained: a handshake for one without reads no storage.
	issued map[string]bool
	// wildcards maps the base of every attached wildcard domain to it
	// ("shop.example.com" to "*.shop.example.com"): a name one label
	// below a base is covered by it (coveredBy).
	wildcards map[string]string
	// owned and delegated hold the owned domains and those whose
	// _acme-challenge CNAME points into the ACME DNS zone (ownership.go).
	owned, delegated map[string]bool
}

// Refresh rebuilds the routing table from the store, and brings this
// instance's certificates in line with it (followTable). Every change the
// manager makes calls it; call it after changing the project's slug.
// Refreshes run one at a time, their certificate steps included: one that
// read the store before a change must not store its table after the
// refresh that follows the change, and once a refresh returns, the
// certificates in memory follow the table it stored.
func (m *Manager) Refresh(ctx context.Context) error {
	m.refreshMu.Lock()
	defer m.refreshMu.Unlock()
	p, err := m.db.Project(ctx)
	if err != nil {
		return err
	}
	ds, err := m.db.Domains(ctx)
	if err != nil {
		return err
	}
	s, err := m.db.Settings(ctx)
	if err != nil {
		return err
	}
	t := &routingTable{
		defaultAddr: m.DefaultAddress(p),
		served:      make(map[string]bool, len(ds)),
		certAllowed: make(map[string]bool, len(ds)+1),
		issued:      make(map[string]bool, len(ds)),
		redirects:   make(map[string]store.Redirect, len(s.Domains.Redirects)),
		wildcards:   map[string]string{},
		owned:       map[string]bool{},
		delegated:   map[string]bool{},
	}
	if m.cfg.Platform.Domain != "" {
		t.certAllowed[t.defaultAddr] = true
	}
	for _, d := range ds {
		if dnscheck.IsWildcard(d.Name) {
			t.wildcards[dnscheck.WildcardBase(d.Name)] = d.Name
		}
		switch d.Certificate.State {
		case store.CertIssued, store.CertRenewing, store.CertExpired:
			t.issued[d.Name] = true
		}
		if d.Delegation != nil && d.Delegation.Delegated && m.cfg.ACMEDNSZone != "" {
			t.delegated[d.Name] = true
		}
		switch d.State {
		case store.DomainOwned:
			t.owned[d.Name] = true
		case store.DomainVerified:
			t.served[d.Name] = true
			t.certAllowed[d.Name] = true
		case store.DomainMoved:
			t.served[d.Name] = true
		}
	}
	for _, r := range s.Domains.Redirects {
		t.redirects[r.From] = r
	}
	// The table first: from here on the decision function refuses a moved
	// or removed name, so no handshake loads its certificate back as a
	// managed one while followTable changes the cache.
	m.followTable(ctx, m.table.Swap(t), t) // at start, from NewManager's empty table
	return nil
}

// certName is what the certificates ask of the routing table.
func (t *routingTable) certName(name string) certs.Name {
	return certs.Name{Served: t.served[name], Allowed: t.certAllowed[name], Issued: t.issued[name], Default: name == t.defaultAddr,
		Owned: t.owned[name], Delegated: t.delegated[name], Cover: t.coveredBy(name)}
}

// coveredBy is the served wildcard domain that covers host, one label
// below its base, or "". Deeper names ("x.y.shop.example.com") are
// covered by no wildcard: a wildcard certificate is valid for one label
// only. It allocates nothing: handshakes and requests call it.
func (t *routingTable) coveredBy(host string) string {
	if len(t.wildcards) == 0 {
		return ""
	}
	label, parent, ok := strings.Cut(host, ".")
	if !ok || label == "" || label == "*" {
		return ""
	}
	if w := t.wildcards[parent]; w != "" && t.served[w] {
		return w
	}
	return ""
}

// TLSConfig is the configuration of the HTTPS listener (see
// certs.Certs.TLSConfig); nil without ACME.
func (m *Manager) TLSConfig() *tls.Config {
	if m.certs == nil {
		return nil
	}
	return m.certs.TLSConfig()
}

// HTTPChallengeHandler answers ACME HTTP-01 challenges for names that may
// have a certificate and passes every other request to next (see
// certs.Certs.HTTPChallengeHandler).
func (m *Manager) HTTPChallengeHandler(next http.Handler) http.Handler {
	if m.certs == nil {
		return next
	}
	return m.certs.HTTPChallengeHandler(next)
}

// Route decides what a request with this Host header gets.
func (m *Manager) Route(host string) Route {
	h := HostName(host)
	t := m.table.Load()
	if h == t.defaultAddr || IsLocal(h) {
		return Route{Decision: ServeAll}
	}
	if r, ok := t.redirects[h]; ok {
		return Route{Decision: Redirect, To: r.To, Status: r.Status}
	}
	// A name attached on its own wins over a wildcard once it is served;
	// until then the wildcard keeps serving it, so that attaching
	// api.shop.example.com beside *.shop.example.com never takes it
	// offline.
	if h != "" && h[0] == '*' {
		return Route{Decision: Unknown} // a wildcard's own name is no host
	}
	if t.served[h] || t.coveredBy(h) != "" {
		return Route{Decision: ServePublic}
	}
	return Route{Decision: Unknown}
}

// HostName strips the port, the brackets of an IPv6 literal and a trailing
// dot from a Host header, and lower-cases it: the name routing decides on.
func HostName(host string) string {
	if strings.IndexByte(host, ':') >= 0 { // SplitHostPort's error allocates
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
	}
	// strings.Trim(host, "[]"), without the set of the cut characters
	// that Trim builds on every call: this runs on every request.
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

// IsLocal reports whether a host name (as HostName gives it) is this
// machine: localhost or a loopback address.
func IsLocal(h string) bool {
	return h == "localhost" || isLoopback(h)
}

func isLoopback(h string) bool {
	if h == "" || (h[0] != '1' && h[0] != ':') {
		return false // cheap: loopback literals start with 127. or ::
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.IsLoopback()
}
