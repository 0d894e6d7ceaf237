package certs

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3/acme"

	"petstore/store"
)

// The limits a first issuance keeps towards the CA, which locks a name out
// after too many failed validations in an hour.
const (
	maxFailedValidationsPerHour = 5
	firstRetryAfter             = time.Minute
	maxRetryAfter               = time.Hour
)

type obtainRun struct {
	cancel context.CancelFunc
	// again: obtain was called while this attempt ran, so its end looks
	// again and a call that came as it was finishing is not lost.
	again bool
}

// obtain starts an issuance attempt for name unless one is in flight
// (Verify attaches to it, never cancels it); during a back-off the attempt
// starts nothing. A certificate obtained goes into the managed config's
// cache, so maintenance renews it.
func (c *Certs) obtain(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if run := c.obtaining[name]; run != nil {
		run.again = true
		return
	}
	if c.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	run := &obtainRun{cancel: cancel}
	c.obtaining[name] = run
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.attempt(ctx, name)
		cancel()
		c.mu.Lock()
		// stopObtaining may have taken the run out already.
		again := c.obtaining[name] == run && run.again
		if c.obtaining[name] == run {
			delete(c.obtaining, name)
		}
		c.mu.Unlock()
		if again {
			// Starts nothing during the back-off or once the certificate is stored.
			c.obtain(name)
		}
	}()
}

// attempt runs one issuance attempt: at most one order per CA, in turn
// until one issues.
func (c *Certs) attempt(ctx context.Context, name string) {
	release, wanted, delegated := c.claimAttempt(ctx, name)
	if release != nil {
		defer release()
	}
	if !wanted {
		return
	}
	started := c.now().UTC()
	c.save(ctx, name, func(cert *store.Certificate) {
		if cert.State != store.CertIssued && cert.State != store.CertRenewing {
			cert.State = store.CertPending
		}
		cert.LastAttempt = &store.CertAttempt{At: started}
		cert.NextAttemptAt, cert.NextAttemptReason = nil, ""
	})
	c.countPresented(name)
	// A single attempt (certmagic retries only non-interactive ones); the
	// back-off decides the next.
	obtainer := c.obtainer
	if delegated && c.dnsObtainer != nil {
		// From the record: the routing table may lag another instance's check.
		obtainer = c.dnsObtainer
	}
	err := obtainer.ObtainCertSync(ctx, name)
	validations := failedValidations(c.presentedCount(name), err)
	if err == nil {
		var cert certmagic.Certificate
		if cert, err = c.certs.CacheManagedCertificate(ctx, name); err == nil {
			if ctx.Err() != nil {
				// Stopped (removed, moved) as it went into the cache: what the
				// stop took out of the cache before, this takes out after.
				c.cache.RemoveManaged([]certmagic.SubjectIssuer{{Subject: name}})
				return
			}
			c.recordIssued(ctx, name, cert.Leaf, c.issuerKeyOf(ctx, name, cert.Leaf), false)
			return
		}
	}
	if ctx.Err() != nil {
		return
	}
	c.log.Warn("certificate not obtained", "domain", name, "failed_validations", validations, "err", err)
	c.recordFailure(ctx, name, err, validations)
}

func (c *Certs) stopObtaining(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if run := c.obtaining[name]; run != nil {
		run.cancel()
		delete(c.obtaining, name)
	}
}

// issuerKeyOf finds which CA's storage holds leaf, which certmagic does
// not say.
func (c *Certs) issuerKeyOf(ctx context.Context, name string, leaf *x509.Certificate) string {
	for _, iss := range c.issuers {
		stored, err := c.storedLeaf(ctx, certmagic.StorageKeys.SiteCert(iss.IssuerKey(), name))
		if err == nil && stored.SerialNumber.Cmp(leaf.SerialNumber) == 0 {
			return iss.IssuerKey()
		}
	}
	return ""
}

// promptlessIssuer never asks for an email on the terminal, as certmagic
// does in an interactive attempt without one.
type promptlessIssuer struct{ *certmagic.ACMEIssuer }

func (p promptlessIssuer) PreCheck(ctx context.Context, names []string, _ bool) error {
	return p.ACMEIssuer.PreCheck(ctx, names, false)
}

// failedValidations is how many validations failed at the CA in an attempt
// that presented so many challenges and ended with err. A failed attempt
// is taken to have failed them all: one too many only delays the next
// attempt, one too few could pass the CA's hourly limit.
func failedValidations(presented int, err error) int {
	if err == nil {
		return max(presented-1, 0)
	}
	var problem acme.Problem
	if presented == 0 && errors.As(err, &problem) && slices.Contains(validationProblems, problem.Type) {
		return 1
	}
	return presented
}

// validationProblems tell failed validations from refusals of the order.
var validationProblems = []string{acme.ProblemTypeConnection, acme.ProblemTypeDNS, acme.ProblemTypeUnauthorized,
	acme.ProblemTypeIncorrectResponse, acme.ProblemTypeTLS, acme.ProblemTypeCAA}

// recordFailure records a failed attempt and schedules the next one.
func (c *Certs) recordFailure(ctx context.Context, name string, err error, validations int) {
	now := c.now().UTC()
	msg := err.Error()
	c.save(ctx, name, func(cert *store.Certificate) {
		// The next attempt waits no less than this one did, so that delays only
		// grow while attempts fail, also after the hourly limit set one.
		var waited time.Duration
		if prev := lastFailureAt(cert.Events); cert.FailedAttempts > 0 && cert.LastAttempt != nil && !prev.IsZero() {
			waited = min(cert.LastAttempt.At.Sub(prev), maxRetryAfter)
		}
		cert.FailedValidations = append(RecentFailures(cert.FailedValidations, now), slices.Repeat([]time.Time{now}, validations)...)
		cert.FailedAttempts++
		next, limited := c.nextAttempt(now, cert.FailedAttempts, cert.FailedValidations, waited)
		cert.NextAttemptAt = &next
		cert.NextAttemptReason = c.waitReason(ctx, name, err, validations, limited)
		if cert.State != store.CertIssued && cert.State != store.CertRenewing {
			cert.State = store.CertFailed
		}
		cert.Error = msg
		cert.LastAttempt = &store.CertAttempt{At: now, Error: msg}
		cert.Events = addEvent(cert.Events, store.CertEvent{Kind: store.CertEventFailed, At: now, Detail: msg})
	})
}

// nextAttempt is when the attempt after the failures-th failure in a row
// may start: 1, 2, 4 ... minutes later, no sooner than atLeast, at most
// an hour, and never so soon that the hour's failed validations could pass
// the CA's limit (an attempt may fail one per challenge type). limited:
// the limit, not the back-off, set the time.
func (c *Certs) nextAttempt(now time.Time, failures int, failedValidations []time.Time, atLeast time.Duration) (next time.Time, limited bool) {
	next = now.Add(min(max(min(firstRetryAfter<<min(max(failures-1, 0), 16), maxRetryAfter), atLeast), maxRetryAfter))
	room := maxFailedValidationsPerHour - c.challengeTypes
	if n := len(failedValidations); n > room {
		// From this time on only room failures remain within the hour.
		if free := failedValidations[n-room-1].Add(time.Hour); free.After(next) {
			return free, true
		}
	}
	return next, false
}

// lastFailureAt is when the latest failed event happened; zero if none.
func lastFailureAt(events []store.CertEvent) time.Time {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == store.CertEventFailed {
			return events[i].At
		}
	}
	return time.Time{}
}

// RecentFailures keeps the failed validations of the hour before now.
func RecentFailures(ts []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(ts) && !ts[i].After(now.Add(-time.Hour)) {
		i++
	}
	return slices.Clone(ts[i:])
}

// waitReason says, in the customer's words, why the next attempt waits.
func (c *Certs) waitReason(ctx context.Context, name string, err error, validations int, limited bool) string {
	var reason string
	var problem acme.Problem
	var netErr net.Error
	switch {
	case errors.As(err, &problem) && problem.Type == acme.ProblemTypeCAA:
		reason = "the certificate authority's own CAA check refused the name: " + problemText(err)
	case validations > 0:
		d, derr := c.db.Domain(ctx, name)
		if derr == nil && d.Check != nil && d.Check.Verified {
			reason = fmt.Sprintf("the certificate authority still sees the old record; resolvers may keep it for up to its TTL (%d s)", d.Check.MaxTTL)
		} else {
			reason = "the certificate authority could not validate the domain: " + problemText(err)
		}
	case errors.As(err, &problem) && problem.Type == acme.ProblemTypeRateLimited:
		reason = "the certificate authority's rate limit was reached: " + problemText(err)
	case errors.As(err, &netErr) || errors.As(err, &problem) && problem.Status >= 500:
		reason = "the certificate authority did not answer: " + problemText(err)
	default:
		reason = "the last attempt failed: " + problemText(err)
	}
	if limited {
		reason += fmt.Sprintf("; at most %d failed validations per hour are allowed before the certificate authority locks the name out", maxFailedValidationsPerHour)
	}
	return reason
}

// problemText is the CA's own words when it sent a problem document.
func problemText(err error) string {
	var problem acme.Problem
	if errors.As(err, &problem) && problem.Detail != "" {
		return problem.Detail
	}
	return err.Error()
}
