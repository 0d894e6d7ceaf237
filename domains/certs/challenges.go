// What this service sees of its own ACME challenges: those its solvers
// present, and the CA's HTTP-01 requests.

package certs

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3/acme"

	"petstore/domains/dnscheck"
)

// challengeTokens is the storage folder where certmagic's distributed
// solvers keep a presented challenge, so any instance can answer it.
const challengeTokens = "/challenge_tokens/"

// notePresented counts a challenge about to be presented for a name being
// attempted: each is one validation at the CA.
func (c *Certs) notePresented(key string, value []byte) {
	if !strings.Contains(key, challengeTokens) {
		return
	}
	var chal acme.Challenge
	if json.Unmarshal(value, &chal) != nil || chal.Identifier.Value == "" {
		return
	}
	c.mu.Lock()
	if n, counting := c.presented[chal.Identifier.Value]; counting {
		c.presented[chal.Identifier.Value] = n + 1
	}
	c.mu.Unlock()
}

// countPresented starts counting name's presented challenges for the
// attempt about to run; the map holds only names being attempted.
func (c *Certs) countPresented(name string) {
	c.mu.Lock()
	c.presented[name] = 0
	c.mu.Unlock()
}

// presentedCount ends the count countPresented started.
func (c *Certs) presentedCount(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.presented[name]
	delete(c.presented, name)
	return n
}

// HTTPChallengeHandler answers ACME HTTP-01 challenges and passes every
// other request to next. Only names that may have a certificate are looked
// up: this instance's challenges from memory, another's with a storage
// read.
func (c *Certs) HTTPChallengeHandler(next http.Handler) http.Handler {
	if c.cfg.ACME.DisableHTTPChallenge {
		return next
	}
	// Challenges in flight are kept per name, whichever CA asked.
	distributed := c.issuers[0].HTTPChallengeHandler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := dnscheck.HostName(r.Host)
		if !certmagic.LooksLikeHTTPChallenge(r) || !c.names(host).Allowed {
			next.ServeHTTP(w, r)
			return
		}
		if chal, ok := certmagic.GetACMEChallenge(host); ok && certmagic.SolveHTTPChallenge(c.issuers[0].Logger, w, r, chal.Challenge) {
			return
		}
		distributed.ServeHTTP(w, r)
	})
}
