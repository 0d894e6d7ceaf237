package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// The TLS rows (docs/performance.md) measure new connections to a server
// whose data file holds verified domains and their certificates. Its
// --acme-ca is a port nobody listens on, so a server asking its CA for
// anything fails the handshake or logs it: an error of the run.
const (
	tlsACMECA         = "https://127.0.0.1:1/directory"
	tlsPlatformDomain = "petstore.test"
	tlsCertLifetime   = 90 * 24 * time.Hour // as Let's Encrypt's
	tlsDialTimeout    = 5 * time.Second     // connect and handshake
	// tlsSeedWorkers write a data file's domains at once, so that the store
	// commits them in groups.
	tlsSeedWorkers = 32
	// tlsWarmPassMaxErrors stops the warm pass early: a server failing these
	// many handshakes fails the others too, slowly.
	tlsWarmPassMaxErrors = 5
)

// domainCount writes "1 verified domain", "1,000 verified domains".
func domainCount(n int) string {
	if n == 1 {
		return "1 verified domain"
	}
	return thousands(float64(n)) + " verified domains"
}

func tlsDomainNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("d%d.loadtest.example.com", i)
	}
	return names
}

// logWatch keeps a server's warnings and errors as it writes its log: a
// TLS server that does well logs none, so any is an error.
type logWatch struct {
	mu      sync.Mutex
	partial []byte
	lines   []string // warnings and errors
}

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		line, rest, ok := bytes.Cut(w.partial, []byte("\n"))
		if !ok && len(line) <= 64<<10 { // a line that long is no log line of ours
			return len(p), nil
		}
		if l := string(line[:min(len(line), 64<<10)]); strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			w.lines = append(w.lines, l)
		}
		w.partial = rest
	}
}

func (w *logWatch) summary() (lines, handshakeErrs, certmagic int, samples []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.lines {
		if strings.Contains(l, "TLS handshake error") {
			handshakeErrs++
		}
		if strings.Contains(l, "component=certmagic") {
			certmagic++
		}
		if len(samples) < maxErrSamples {
			if len(l) > 400 {
				l = l[:400] + "..."
			}
			samples = append(samples, l)
		}
	}
	return len(w.lines), handshakeErrs, certmagic, samples
}

// tlsTarget is one TLS server and the names its clients ask for.
type tlsTarget struct {
	label string
	proc  *proc
	data  string // its data file
	addr  string // its --https-listen
	names []string
	roots *x509.CertPool // the test CA, the only one the client trusts
	watch *logWatch
}

// handshake opens one connection with the SNI of name i, completes and
// verifies the handshake, and closes it; lat runs from the TCP connect to
// the end of the handshake.
func (t *tlsTarget) handshake(ctx context.Context, i int) (lat time.Duration, st tls.ConnectionState, err error) {
	ctx, cancel := context.WithTimeout(ctx, tlsDialTimeout)
	defer cancel()
	d := tls.Dialer{NetDialer: &net.Dialer{}, Config: &tls.Config{
		ServerName: t.names[i],
		RootCAs:    t.roots,
		NextProtos: []string{"h2", "http/1.1"},
		// No ClientSessionCache: no resumption, so no session tickets.
		MinVersion: tls.VersionTLS12,
	}}
	t0 := time.Now()
	conn, err := d.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return 0, st, err
	}
	lat = time.Since(t0)
	st = conn.(*tls.Conn).ConnectionState()
	conn.Close()
	if st.DidResume {
		return lat, st, errors.New("the session was resumed")
	}
	return lat, st, nil
}

// tlsPhase opens new connections, one per request, from
// b.cfg.connections workers, SNI random among the names, until d passed.
func (b *bench) tlsPhase(ctx context.Context, t *tlsTarget, d time.Duration) *loadResult {
	return runWorkers(ctx, b.cfg.connections, d, func(rng *mrand.Rand) (time.Duration, bool, string) {
		i := rng.IntN(len(t.names))
		lat, _, err := t.handshake(ctx, i)
		if err != nil {
			return 0, false, fmt.Sprintf("TLS to %s, SNI %s: %v", t.addr, t.names[i], err)
		}
		return lat, true, ""
	})
}

// warmPass opens one connection per name so that every certificate is in
// the server's memory cache before measuring (a first handshake may load
// it from storage). It returns one connection's state, to describe them.
func (b *bench) warmPass(ctx context.Context, t *tlsTarget) (tls.ConnectionState, error) {
	var (
		failures atomic.Int64
		mu       sync.Mutex
		errs     []string
		state    tls.ConnectionState
		g        errgroup.Group
	)
	g.SetLimit(min(b.cfg.connections, len(t.names)))
	for i, name := range t.names {
		if ctx.Err() != nil || failures.Load() >= tlsWarmPassMaxErrors {
			break
		}
		g.Go(func() error {
			_, st, err := t.handshake(ctx, i)
			if err == nil && (len(st.PeerCertificates) == 0 || !slices.Contains(st.PeerCertificates[0].DNSNames, name)) {
				err = errors.New("the certificate served is not the one of this name")
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures.Add(1)
				if len(errs) < maxErrSamples {
					errs = append(errs, fmt.Sprintf("SNI %s: %v", name, err))
				}
			} else if state.Version == 0 {
				state = st
			}
			return nil
		})
	}
	g.Wait()
	if err := ctx.Err(); err != nil {
		return state, err
	}
	if len(errs) > 0 {
		return state, fmt.Errorf("%d handshake(s) failed (stopped after %d), e.g.\n%s",
			failures.Load(), tlsWarmPassMaxErrors, indent(strings.Join(errs, "\n")))
	}
	return state, nil
}

// tlsServers seeds, starts and warms the TLS servers (1 domain and
// cfg.tlsDomains) and adds their rows. A server that cannot serve every
// name is an error; its row stays unmeasured.
func (b *bench) tlsServers(ctx context.Context) error {
	if b.cfg.tlsDomains == 0 {
		return nil // -tls-domains 0: skipped
	}
	ca, err := newTestCA(time.Now())
	if err != nil {
		return err
	}
	for _, n := range []int{1, b.cfg.tlsDomains} {
		t, err := b.tlsServer(ctx, ca, n)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			b.fail("%s: %v", tlsRow(n), err)
			continue
		}
		b.tlsTargets = append(b.tlsTargets, t)
		b.jobs = append(b.jobs, b.serverJob(t.label, t.proc, func(ctx context.Context, d time.Duration) *loadResult { return b.tlsPhase(ctx, t, d) }))
	}
	return nil
}

func (b *bench) tlsServer(ctx context.Context, ca *testCA, n int) (*tlsTarget, error) {
	names := tlsDomainNames(n)
	data := filepath.Join(b.dir, fmt.Sprintf("tls-%d.db", n))
	b.progress("seeding %s with issued certificates into %s", domainCount(n), data)
	t0 := time.Now()
	if err := seedTLSStore(ctx, data, b.adminToken, ca, tlsACMECA, names); err != nil {
		return nil, fmt.Errorf("seeding: %w", err)
	}
	seeded := time.Since(t0)
	httpsAddr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	t := &tlsTarget{label: tlsRow(n), data: data, addr: httpsAddr, names: names,
		roots: ca.pool, watch: &logWatch{}}
	t.proc, err = b.startPetstore(ctx, fmt.Sprintf("petstore (TLS, %s)", domainCount(n)), b.bin, t.watch,
		"--data", data, "--admin-token", b.adminToken, "--https-listen", httpsAddr, "--acme-ca", tlsACMECA, "--domain", tlsPlatformDomain)
	if err != nil {
		return nil, err
	}
	t1 := time.Now()
	st, err := b.warmPass(ctx, t)
	if err != nil {
		if _, _, _, samples := t.watch.summary(); len(samples) > 0 {
			err = fmt.Errorf("%w\n  the server's log:\n%s", err, indent(strings.Join(samples, "\n")))
		}
		return nil, fmt.Errorf("the pass over every name: %w", err)
	}
	warmed := time.Since(t1)
	b.progress("%s: one handshake per name in %v", t.proc.name, warmed.Round(time.Millisecond))
	b.notes = append(b.notes, fmt.Sprintf("%s: seeding (%s, certificates, keys, metadata) took %.2f s; the pass over every name after ready (one handshake each, %d at a time, loading certificates not cached yet) took %.2f s; %s, %s, %s, ALPN %q",
		t.label, domainCount(n), seeded.Seconds(), min(b.cfg.connections, n), warmed.Seconds(),
		tls.VersionName(st.Version), st.CurveID, tls.CipherSuiteName(st.CipherSuite), st.NegotiatedProtocol))
	return t, nil
}

// checkTLSServers checks, once the servers stopped, that none asked its
// CA or failed a handshake: clean logs, data files as seeded.
func (b *bench) checkTLSServers(ctx context.Context) {
	if len(b.tlsTargets) == 0 {
		return
	}
	failed := len(b.errors)
	for _, t := range b.tlsTargets {
		lines, hsErrs, cm, samples := t.watch.summary()
		if lines > 0 {
			b.fail("%s: the server logged %d warning(s) or error(s), %d of them TLS handshake errors and %d from certmagic, e.g.\n%s",
				t.label, lines, hsErrs, cm, indent(strings.Join(samples, "\n")))
		}
		if err := checkTLSStore(ctx, t.data, tlsACMECA, t.names); err != nil {
			b.fail("%s: the data file after the run: %v", t.label, err)
		}
	}
	if len(b.errors) == failed {
		b.notes = append(b.notes, fmt.Sprintf("TLS servers: nothing was asked of the CA (--acme-ca %s, where nothing listens): no warning or error in their logs, no handshake error, every domain's certificate still issued, no ACME account and no other file in their certificate storage", tlsACMECA))
	}
}
