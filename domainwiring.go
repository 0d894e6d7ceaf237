package main

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"time"

	"petstore/domains"
	"petstore/domains/acmedns"
	"petstore/domains/dnscheck"
	"petstore/store"
)

// domainsNow is the custom domains' clock, for tests of rules spanning
// hours.
var domainsNow = time.Now

// domainsTickEvery, when set, overrides the background loops' tick (tests
// needing a round within a second).
var domainsTickEvery time.Duration

// newDomainManager builds the custom-domain manager from the flags:
// certificates only when this process terminates TLS.
func newDomainManager(cfg config, db store.Store, log *slog.Logger) (*domains.Manager, error) {
	var publicIPs []netip.Addr
	for _, s := range cfg.publicIPs {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("--public-ip %q: not an IP address", s)
		}
		publicIPs = append(publicIPs, a)
	}
	cnameTarget := cfg.cnameTarget
	if development(cfg) {
		cnameTarget = domains.DevelopmentTarget
	}
	dc := domains.Config{
		Store:    db,
		Platform: dnscheck.Platform{Domain: cfg.domain, CNAMETarget: cnameTarget, PublicIPs: publicIPs},
		Checker: &dnscheck.Checker{
			Resolvers: cfg.dnsResolvers, CAAIdentities: cfg.acmeCAAIdentities,
			AllowPrivateNameservers: cfg.dnsAllowPrivate,
		},
		AllowTestTLDs: cfg.allowTestTLDs,
		ACMEDNSZone:   cfg.acmeDNSZone,
		Logger:        log,
		Now:           domainsNow,
		TickEvery:     domainsTickEvery,
	}
	if cfg.httpsListen != "" {
		a := &domains.ACME{
			CA: cfg.acmeCAs[0], FallbackCAs: cfg.acmeCAs[1:], Email: cfg.acmeEmail, Profile: cfg.acmeProfile,
			TLSPort: portOf(cfg.httpsListen, 443), HTTPPort: portOf(cfg.httpListen, 80),
			DisableHTTPChallenge: cfg.httpListen == "", RenewInterval: cfg.renewInterval,
		}
		if cfg.acmeCARoot != "" {
			pemBytes, err := os.ReadFile(cfg.acmeCARoot)
			if err != nil {
				return nil, fmt.Errorf("--acme-ca-root: %w", err)
			}
			a.TrustedRoots = x509.NewCertPool()
			if !a.TrustedRoots.AppendCertsFromPEM(pemBytes) {
				return nil, fmt.Errorf("--acme-ca-root %s: no PEM certificate in it", cfg.acmeCARoot)
			}
		}
		dc.ACME = a
	}
	return domains.NewManager(dc)
}

// startACMEDNS starts the authoritative DNS server of --acme-dns-zone on
// its sockets (bindSockets) and returns what stops it.
func startACMEDNS(cfg config, db store.Store, log *slog.Logger, sockets *boundSockets) (stop func(), err error) {
	s, err := acmedns.New(acmedns.Config{Zone: cfg.acmeDNSZone, Nameservers: cfg.acmeDNSNameservers, Store: db, Logger: log})
	if err != nil {
		return nil, err
	}
	udp, tcp, err := s.Serve(sockets.take())
	if err != nil {
		return nil, err
	}
	log.Info("answering DNS for the ACME zone", "zone", cfg.acmeDNSZone, "udp", udp.String(), "tcp", tcp.String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	}, nil
}

func portOf(addr string, fallback int) int {
	_, p, err := net.SplitHostPort(addr)
	if n, err2 := strconv.Atoi(p); err == nil && err2 == nil {
		return n
	}
	return fallback
}
