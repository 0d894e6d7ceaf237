// What this service sees of its own ACME challenges: each challenge its
// solvers present (certmagic's distributed solvers store it before
// presenting it), and the CA's HTTP-01 requests.

package certs

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3/acme"
)

// challengeTokens is the storage folder where certmagic's distributed
// solvers keep a challenge while it is presented, so that any instance
// can answer it.
const challengeTokens = "/challenge_tokens/"

// notePresented counts a challenge this service is about to present for
// a name with an attempt in flight: every presented challenge is one
// validation at the CA.
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

// countPresented starts counting the challenges presented for name, for
// the attempt that is about to run; only attempts are counted, so the map
// holds no more names than attempts in flight.
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
// other request to next. Only names that may have a certificate are
// looked up: a challenge this instance started is answered from memory,
// and only one started by another instance costs a storage read. A
// request for any other name reaches next without a lookup.
func (c *Certs) HTTPChallengeHandler(next http.Handler) http.Handler {
	if c.cfg.ACME.DisableHTTPChallenge {
		return next
	}
	// Challenges in flight are kept per name, whichever CA asked.
	distributed := c.issuers[0].HTTPChallengeHandler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !certmagic.LooksLikeHTTPChallenge(r) {
			next.ServeHTTP(w, r)
			return
		}
		host := hostName(r.Host)
		if !c.names(host).Allowed {
			next.ServeHTTP(w, r)
			return
		}
		if chal, ok := certmagic.GetACMEChallenge(host); ok && certmagic.SolveHTTPChallenge(c.issuers[0].Logger, w, r, chal.Challenge) {
			return
		}
		distributed.ServeHTTP(w, r)
	})
}

// hostName is the name a Host header asks for: no port, no trailing dot,
// lower case.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
}
