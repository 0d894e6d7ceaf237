package domains

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"petstore/domains/dnscheck"
	"petstore/store"
)

// RedirectStatuses are the statuses a redirect may have; the first is the default.
var RedirectStatuses = []int{301, 302, 307, 308}

// flattenRedirects validates redirects and rewrites chains to one hop
// (a->b, b->c is saved as a->c, b->c): each hop is a round trip, and
// browsers cache redirects. A loop is refused.
func flattenRedirects(in []store.Redirect, attached map[string]store.Domain, defaultAddr string) ([]store.Redirect, error) {
	out := make([]store.Redirect, 0, len(in))
	next := make(map[string]string, len(in))
	for i, r := range in {
		field := fmt.Sprintf("domains.redirects[%d]", i)
		from, err := settingsName(r.From, defaultAddr)
		if err != nil {
			return nil, store.Errorf(store.EINVALID, "%s.from: %s", field, store.ErrorMessage(err))
		}
		to, err := settingsName(r.To, defaultAddr)
		if err != nil {
			return nil, store.Errorf(store.EINVALID, "%s.to: %s", field, store.ErrorMessage(err))
		}
		status := cmp.Or(r.Status, RedirectStatuses[0])
		switch {
		case !slices.Contains(RedirectStatuses, status):
			return nil, store.Errorf(store.EINVALID, "%s.status: %d is not one of 301, 302, 307, 308", field, status)
		case attached[from].Name == "":
			return nil, store.Errorf(store.EINVALID, "%s.from: %s is not an attached domain", field, from)
		case to != defaultAddr && attached[to].Name == "":
			return nil, store.Errorf(store.EINVALID, "%s.to: %s is neither an attached domain nor the default address %s", field, to, defaultAddr)
		case from == to:
			return nil, store.Errorf(store.EINVALID, "%s: %s redirects to itself", field, from)
		}
		if _, dup := next[from]; dup {
			return nil, store.Errorf(store.EINVALID, "%s.from: %s has two redirects", field, from)
		}
		next[from] = to
		out = append(out, store.Redirect{From: from, To: to, Status: status})
	}
	for i, r := range out {
		chain := []string{r.From}
		to := r.To
		for {
			if slices.Contains(chain, to) {
				return nil, store.Errorf(store.EINVALID, "domains.redirects: %s -> %s is a loop", strings.Join(chain, " -> "), to)
			}
			chain = append(chain, to)
			hop, ok := next[to]
			if !ok {
				break
			}
			to = hop
		}
		out[i].To = to
		// Judged where the chain finally lands, not at its hops.
		if to != defaultAddr && attached[to].State != store.DomainVerified {
			return nil, store.Errorf(store.EINVALID, "domains.redirects[%d].to: %s", i, notVerified(attached[to], defaultAddr))
		}
	}
	return out, nil
}

// checkPrimary validates the primary domain: empty, a verified domain or
// the default address, and not a redirect source.
func checkPrimary(primary string, attached map[string]store.Domain, defaultAddr string, redirects []store.Redirect) (string, error) {
	if strings.TrimSpace(primary) == "" {
		return "", nil
	}
	name, err := settingsName(primary, defaultAddr)
	if err != nil {
		return "", store.Errorf(store.EINVALID, "domains.primary: %s", store.ErrorMessage(err))
	}
	if name != defaultAddr && attached[name].Name == "" {
		return "", store.Errorf(store.EINVALID, "domains.primary: %s is neither an attached domain nor the default address %s", name, defaultAddr)
	}
	if name != defaultAddr && attached[name].State != store.DomainVerified {
		return "", store.Errorf(store.EINVALID, "domains.primary: %s", notVerified(attached[name], defaultAddr))
	}
	for _, r := range redirects {
		if r.From == name {
			return "", store.Errorf(store.EINVALID, "domains.primary: %s redirects to %s, so it cannot be the primary domain", name, r.To)
		}
	}
	return name, nil
}

// notVerified words why an unverified domain cannot be a redirect target
// or primary: no certificate, and browsers cache a 301 for good.
func notVerified(d store.Domain, defaultAddr string) string {
	return fmt.Sprintf("%s is %s, not verified, so it may have no certificate; use a verified domain or the default address %s",
		d.Name, d.State, defaultAddr)
}

// settingsName normalises a settings name; the default address is taken
// as is (localhost in development, which Normalize refuses).
func settingsName(s, defaultAddr string) (string, error) {
	if t := dnscheck.Canonical(s); t == defaultAddr {
		return t, nil
	}
	if dnscheck.LooksLikeWildcard(s) {
		// A redirect answers one Host, a primary is one address: no wildcard.
		return "", store.Errorf(store.EINVALID, "%s is a wildcard domain; redirects and the primary domain name single domains, such as www.%s (attach it on its own first)",
			dnscheck.Canonical(s), strings.TrimPrefix(strings.TrimPrefix(dnscheck.Canonical(s), "*"), "."))
	}
	return dnscheck.Normalize(s)
}
