package domains

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
	"go.uber.org/zap/zapcore"

	"petstore/store"
)

// The limits a domain's first issuance keeps towards the CA: Let's Encrypt
// locks a name out for an hour after 5 failed validations in an hour.
const (
	maxFailedValidationsPerHour = 5
	firstRetryAfter             = time.Minute
	maxRetryAfter               = time.Hour
)

type obtainRun struct {
	cancel context.CancelFunc
	// again is set when obtain was called while this attempt ran: the
	// attempt's end looks again, so that a call that came as it was
	// finishing (releasing its claim) is not lost.
	again bool
}

// obtain makes sure the certificate of name is being requested: it starts
// an attempt unless one is in flight (Verify and Re-verify attach to it,
// they never cancel it). The attempt itself (claimAttempt) starts nothing
// while failed attempts are backing off: the domain says until when, and
// the certificate loop starts the next one then. A certificate obtained
// goes into the cache through the managed config, so maintenance renews it.
func (m *Manager) obtain(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if run := m.obtaining[name]; run != nil {
		run.again = true
		return
	}
	if m.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithCancel(m.ctx)
	run := &obtainRun{cancel: cancel}
	m.obtaining[name] = run
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.attempt(ctx, name)
		cancel()
		m.mu.Lock()
		// stopObtaining may have taken the run out already.
		again := m.obtaining[name] == run && run.again
		if m.obtaining[name] == run {
			delete(m.obtaining, name)
		}
		m.mu.Unlock()
		if again {
			// Starts nothing while the failure's back-off runs, or once
			// the certificate is in storage.
			m.obtain(name)
		}
	}()
}

// attempt runs one issuance attempt: one ACME order per CA at most, each
// CA in turn until one issues.
func (m *Manager) attempt(ctx context.Context, name string) {
	release, wanted := m.claimAttempt(ctx, name)
	if release != nil {
		defer release()
	}
	if !wanted {
		return
	}
	started := m.now().UTC()
	m.updateCert(ctx, name, func(c *store.Certificate) {
		if c.State != store.CertIssued && c.State != store.CertRenewing {
			c.State = store.CertPending
		}
		c.LastAttempt = &store.CertAttempt{At: started}
		c.NextAttemptAt, c.NextAttemptReason = nil, ""
	})
	m.countFailedValidations(name)
	// A single attempt (certmagic retries only non-interactive ones): the
	// back-off below decides when the next one starts.
	err := m.obtainer.ObtainCertSync(ctx, name)
	validations := m.failedValidationsCounted(name)
	if err == nil {
		var cert certmagic.Certificate
		if cert, err = m.certs.CacheManagedCertificate(ctx, name); err == nil {
			m.recordIssued(ctx, name, cert.Leaf, m.issuerKeyOf(ctx, name, cert.Leaf), false)
			return
		}
	}
	if ctx.Err() != nil {
		return
	}
	var problem acme.Problem
	if validations == 0 && errors.As(err, &problem) && isValidationProblem(problem) {
		validations = 1
	}
	m.log.Warn("certificate not obtained", "domain", name, "failed_validations", validations, "err", err)
	m.recordFailure(ctx, name, err, validations)
}

func (m *Manager) stopObtaining(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if run := m.obtaining[name]; run != nil {
		run.cancel()
		delete(m.obtaining, name)
	}
}

// issuerKeyOf finds which CA's storage holds leaf: certmagic does not say
// which issuer a cached certificate came from.
func (m *Manager) issuerKeyOf(ctx context.Context, name string, leaf *x509.Certificate) string {
	for _, iss := range m.issuers {
		stored, err := m.storedLeaf(ctx, certmagic.StorageKeys.SiteCert(iss.IssuerKey(), name))
		if err == nil && stored.SerialNumber.Cmp(leaf.SerialNumber) == 0 {
			return iss.IssuerKey()
		}
	}
	return ""
}

// promptlessIssuer is an ACME issuer that never asks for an email on the
// terminal, which certmagic does in an interactive attempt without one.
type promptlessIssuer struct{ *certmagic.ACMEIssuer }

func (p promptlessIssuer) PreCheck(ctx context.Context, names []string, _ bool) error {
	return p.ACMEIssuer.PreCheck(ctx, names, false)
}

// isValidationProblem tells the ACME problems that count as a failed
// validation at the CA from refusals of the order itself.
func isValidationProblem(p acme.Problem) bool {
	switch p.Type {
	case acme.ProblemTypeConnection, acme.ProblemTypeDNS, acme.ProblemTypeUnauthorized,
		acme.ProblemTypeIncorrectResponse, acme.ProblemTypeTLS, acme.ProblemTypeCAA:
		return true
	}
	return false
}

// recordFailure records a failed attempt and schedules the next one.
func (m *Manager) recordFailure(ctx context.Context, name string, err error, validations int) {
	now := m.now().UTC()
	msg := err.Error()
	m.updateCert(ctx, name, func(c *store.Certificate) {
		// How long this attempt waited after the failure before it: the
		// next waits no less, so that the delays only grow while attempts
		// keep failing, also after the hourly limit set one.
		var waited time.Duration
		if prev := lastFailureAt(c.Events); c.FailedAttempts > 0 && c.LastAttempt != nil && !prev.IsZero() {
			waited = min(c.LastAttempt.At.Sub(prev), maxRetryAfter)
		}
		c.FailedValidations = append(recentFailures(c.FailedValidations, now), slices.Repeat([]time.Time{now}, validations)...)
		c.FailedAttempts++
		next, limited := m.nextAttempt(now, c.FailedAttempts, c.FailedValidations, waited)
		c.NextAttemptAt = &next
		c.NextAttemptReason = m.waitReason(ctx, name, err, validations, limited)
		if c.State != store.CertIssued && c.State != store.CertRenewing {
			c.State = store.CertFailed
		}
		c.Error = msg
		c.LastAttempt = &store.CertAttempt{At: now, Error: msg}
		c.Events = addEvent(c.Events, store.CertEvent{Kind: store.CertEventFailed, At: now, Detail: msg})
	})
}

// nextAttempt is when the attempt after the failures-th failure in a row
// may start: 1, 2, 4 ... minutes later but no sooner than atLeast, at most
// an hour, and never so soon that the failed validations of the hour
// before could pass the CA's limit (an attempt may fail one validation per
// challenge type). limited says the hourly limit, not the back-off, set
// the time.
func (m *Manager) nextAttempt(now time.Time, failures int, failedValidations []time.Time, atLeast time.Duration) (next time.Time, limited bool) {
	next = now.Add(min(max(doubling(firstRetryAfter, failures, maxRetryAfter), atLeast), maxRetryAfter))
	room := maxFailedValidationsPerHour - m.challengeTypes
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

// recentFailures keeps the failed validations of the hour before now.
func recentFailures(ts []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(ts) && !ts[i].After(now.Add(-time.Hour)) {
		i++
	}
	return slices.Clone(ts[i:])
}

// waitReason says, in the customer's words, why the next attempt waits.
func (m *Manager) waitReason(ctx context.Context, name string, err error, validations int, limited bool) string {
	var reason string
	var problem acme.Problem
	var netErr net.Error
	switch {
	case errors.As(err, &problem) && problem.Type == acme.ProblemTypeCAA:
		reason = "the certificate authority's own CAA check refused the name: " + problemText(err)
	case validations > 0:
		d, derr := m.db.Domain(ctx, name)
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

// TendCertificates does one round of the certificate loop now: verified
// domains without a certificate whose next attempt is due get one; a
// certificate whose file left storage is recorded as removed and requested
// again; one past its notAfter is recorded as expired. Exported for tests.
func (m *Manager) TendCertificates(ctx context.Context) {
	ds := m.certificateDomains(ctx)
	now := m.now().UTC()
	for _, d := range ds {
		if ctx.Err() != nil {
			return
		}
		c := d.Certificate
		switch c.State {
		case store.CertIssued, store.CertRenewing, store.CertExpired:
			if !m.certInStorage(ctx, d.Name) {
				m.updateCert(ctx, d.Name, func(c *store.Certificate) {
					c.State = store.CertNone
					c.Serial, c.Names, c.NotBefore, c.NotAfter, c.RenewalDueAt = "", nil, nil, nil, nil
					c.Events = addEvent(c.Events, store.CertEvent{Kind: store.CertEventRemoved, At: now, Detail: "the certificate file is no longer in storage"})
				})
				m.cache.RemoveManaged([]certmagic.SubjectIssuer{{Subject: d.Name}})
				if d.State == store.DomainVerified {
					m.obtain(d.Name)
				}
				continue
			}
			if c.State != store.CertExpired && c.NotAfter != nil && !now.Before(*c.NotAfter) {
				m.updateCert(ctx, d.Name, func(c *store.Certificate) { c.State = store.CertExpired })
			}
		default:
			if d.State == store.DomainVerified && (c.NextAttemptAt == nil || !now.Before(*c.NextAttemptAt)) {
				m.obtain(d.Name)
			}
		}
	}
}

// countFailedValidations starts counting the validations the CA reports
// as failed for name, for the attempt that is about to run; only attempts
// are counted, so the map holds no more names than attempts in flight.
func (m *Manager) countFailedValidations(name string) {
	m.mu.Lock()
	m.failedValidations[name] = 0
	m.mu.Unlock()
}

// noteFailedValidation counts a validation that the ACME client's log
// line reports as failed: "validating authorization", at error level, with
// the identifier.
func (m *Manager) noteFailedValidation(e zapcore.Entry, fields []zapcore.Field) {
	if e.Message != failedValidationMessage || e.Level < zapcore.ErrorLevel {
		return
	}
	i := slices.IndexFunc(fields, func(f zapcore.Field) bool { return f.Key == "identifier" && f.Type == zapcore.StringType })
	if i < 0 {
		return
	}
	m.mu.Lock()
	if n, counting := m.failedValidations[fields[i].String]; counting {
		m.failedValidations[fields[i].String] = n + 1
	}
	m.mu.Unlock()
}

const failedValidationMessage = "validating authorization"

// failedValidationsCounted ends the count countFailedValidations started.
func (m *Manager) failedValidationsCounted(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.failedValidations[name]
	delete(m.failedValidations, name)
	return n
}
