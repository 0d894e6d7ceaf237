package domaintest

import (
	"context"
	"testing"

	"petstore/domains/acmedns"
)

// StartACMEDNS starts the service's own DNS server for cfg on UDP and TCP
// of one loopback port, stopped when the test ends.
func StartACMEDNS(tb testing.TB, cfg acmedns.Config) (udp, tcp string) {
	tb.Helper()
	s, err := acmedns.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	pc, ln, err := acmedns.Listen("127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	u, c, err := s.Serve(pc, ln)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return u.String(), c.String()
}
