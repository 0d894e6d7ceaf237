package domains

import (
	"context"
	"crypto/tls"
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
	// ServeAll: the default address and loopback; everything.
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
	// names holds what the attached domains and the default address get,
	// but Default and Cover, which certName adds.
	names     map[string]certs.Name
	redirects map[string]store.Redirect
	// wildcards maps each attached wildcard's base to it ("shop.example.com"
	// to "*.shop.example.com").
	wildcards map[string]string
}

// Refresh rebuilds the routing table from the store and brings this
// instance's certificates in line with it; every manager change calls it.
// Refreshes run one at a time, certificate steps included: one that read
// the store before a change must not store its table after the refresh
// that follows the change.
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
		names:       make(map[string]certs.Name, len(ds)+1),
		redirects:   make(map[string]store.Redirect, len(s.Domains.Redirects)),
		wildcards:   map[string]string{},
	}
	if m.cfg.Platform.Domain != "" {
		t.names[t.defaultAddr] = certs.Name{Allowed: true}
	}
	for _, d := range ds {
		if dnscheck.IsWildcard(d.Name) {
			t.wildcards[dnscheck.WildcardBase(d.Name)] = d.Name
		}
		c := d.Certificate.State
		t.names[d.Name] = certs.Name{
			// A moved domain is served while it holds a certificate.
			Served:    d.State == store.DomainVerified || d.State == store.DomainMoved,
			Allowed:   d.State == store.DomainVerified,
			Issued:    c == store.CertIssued || c == store.CertRenewing || c == store.CertExpired,
			Owned:     d.State == store.DomainOwned,
			Delegated: d.Delegation != nil && d.Delegation.Delegated && m.cfg.ACMEDNSZone != "",
		}
	}
	for _, r := range s.Domains.Redirects {
		t.redirects[r.From] = r
	}
	// The table first: from here on a moved or removed name is refused, so
	// no handshake loads its certificate back as managed meanwhile.
	m.followTable(ctx, m.table.Swap(t), t) // at start, from NewManager's empty table
	return nil
}

// certName is what the certificates ask of the routing table.
func (t *routingTable) certName(name string) certs.Name {
	n := t.names[name]
	n.Default, n.Cover = name == t.defaultAddr, t.coveredBy(name)
	return n
}

// coveredBy is the served wildcard covering host one label below its
// base, or "" (a wildcard certificate covers one label only). It
// allocates nothing: handshakes and requests call it.
func (t *routingTable) coveredBy(host string) string {
	if len(t.wildcards) == 0 {
		return ""
	}
	label, parent, ok := strings.Cut(host, ".")
	if !ok || label == "" || label == "*" {
		return ""
	}
	if w := t.wildcards[parent]; w != "" && t.names[w].Served {
		return w
	}
	return ""
}

// TLSConfig is the HTTPS listener's configuration; nil without ACME.
func (m *Manager) TLSConfig() *tls.Config {
	if m.certs == nil {
		return nil
	}
	return m.certs.TLSConfig()
}

// HTTPChallengeHandler answers ACME HTTP-01 challenges for names that may
// have a certificate and passes every other request to next.
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
	// until then the wildcard keeps serving it, never taking it offline.
	if h != "" && h[0] == '*' {
		return Route{Decision: Unknown} // a wildcard's own name is no host
	}
	if t.names[h].Served || t.coveredBy(h) != "" {
		return Route{Decision: ServePublic}
	}
	return Route{Decision: Unknown}
}

// HostName is the name routing decides on: Host without port, IPv6
// brackets and trailing dot, lower-cased.
func HostName(host string) string { return dnscheck.HostName(host) }

// IsLocal reports whether a host name (as HostName gives it) is localhost
// or a loopback address.
func IsLocal(h string) bool {
	if h == "localhost" {
		return true
	}
	if h == "" || (h[0] != '1' && h[0] != ':') {
		return false // cheap: loopback literals start with 127. or ::
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.IsLoopback()
}
