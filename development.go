package main

import (
	"log/slog"
	"net"
	"net/netip"
	"strings"

	"petstore/domains"
	"petstore/events"
)

// development reports whether this is a developer's `go run .`: loopback
// only, without --domain, --cname-target or --https-listen. Webhooks may
// then reach local receivers and domains show a placeholder target, rather
// than being refused until a restart with flags a first run lacks.
func development(cfg config) bool {
	if cfg.domain != "" || cfg.cnameTarget != "" || cfg.httpsListen != "" {
		return false
	}
	host, _, err := net.SplitHostPort(cfg.listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// webhookPolicy is who may receive webhooks: public addresses, loopback in
// development, anything with --webhook-allow-private (logged).
func webhookPolicy(cfg config, dev bool, log *slog.Logger) events.Policy {
	p := events.Policy{AllowPrivate: cfg.webhookAllowPrivate, AllowLoopback: dev}
	switch {
	case p.AllowPrivate:
		log.Info("webhooks may go to loopback, private and link-local addresses", "why", "--webhook-allow-private")
	case dev:
		log.Info("development mode: webhooks may go to loopback addresses (other private ones stay refused); domains show records for the placeholder target "+domains.DevelopmentTarget+" and their DNS is checked for real",
			"why", "--listen "+cfg.listen+" is a loopback address, without --domain, --cname-target or --https-listen")
	}
	return p
}
