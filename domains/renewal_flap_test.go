package domains_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/domains"
	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/boltstore"
)

// realClock follows the wall clock, as certmagic's maintenance does, and
// can be set back to stand for a check made earlier.
type realClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *realClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}
func (c *realClock) set(offset time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = offset
}

// shortLivedDomain starts pebble with certificates that live lifetime,
// a manager whose maintenance looks every second and whose checks ask a
// FaultyDNS, and a verified domain with its first certificate.
type shortLivedDomain struct {
	name     string
	m        *domains.Manager
	db       *boltstore.DB
	resolver *domaintest.FaultyDNS
	pebble   *domaintest.Pebble
	clk      *realClock
	roots    *x509.CertPool
	first    store.Certificate
}

func startShortLivedDomain(t *testing.T, name string, lifetime time.Duration) *shortLivedDomain {
	t.Helper()
	challtestsrv := domaintest.StartDNS(t)
	pebble := domaintest.StartPebble(t, challtestsrv, domaintest.PebbleOptions{Profiles: map[string]int{"short": int(lifetime.Seconds())}})
	// Pebble validates through challtestsrv; the checker asks the FaultyDNS.
	challtestsrv.AddA(t, "cname.petstore.test", "127.0.0.1")
	challtestsrv.SetCNAME(t, name, "cname.petstore.test")
	resolver := domaintest.StartFaultyDNS(t)
	resolver.SetCNAME(t, name, "cname.petstore.test")
	clk := &realClock{}
	m, db := startFlapManager(t, resolver, pebble, flapOptions{now: clk.now, profile: "short", renewInterval: time.Second, checkEvery: time.Millisecond})
	if _, err := m.Add(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	if d, err := m.Verify(context.Background(), name); err != nil || d.State != store.DomainVerified {
		t.Fatalf("verify: %+v %v", d, err)
	}
	first := waitCert(t, db, name, "first certificate", 20*time.Second, func(c store.Certificate) bool { return c.State == store.CertIssued })
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pebble.IssuerRootPEM(t))
	return &shortLivedDomain{name: name, m: m, db: db, resolver: resolver, pebble: pebble, clk: clk, roots: roots, first: first}
}

// serial is the serial, in hex, of the certificate a handshake gets.
func (s *shortLivedDomain) serial() (string, error) {
	// Generous: the machine may be busy, and a slow handshake is not a failed one.
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp",
		net.JoinHostPort("127.0.0.1", strconv.Itoa(s.pebble.TLSPort)), &tls.Config{ServerName: s.name, RootCAs: s.roots})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return fmt.Sprintf("%x", conn.ConnectionState().PeerCertificates[0].SerialNumber), nil
}

// check runs one background check round and returns the domain after it;
// the test fails if the round checked nothing.
func (s *shortLivedDomain) check(t *testing.T, step string) store.Domain {
	t.Helper()
	before, _ := s.db.Domain(context.Background(), s.name)
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.m.CheckDue(context.Background())
		d, err := s.db.Domain(context.Background(), s.name)
		if err != nil {
			t.Fatal(err)
		}
		if before.Check == nil || d.Check.CheckedAt.After(before.Check.CheckedAt) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no check was due", step)
		}
	}
}

func (s *shortLivedDomain) orders() int { return len(orderAdded.FindAllString(s.pebble.Log(), -1)) }

// TestRenewalDuringFlappingDNS: while the DNS server answers SERVFAIL, then
// times out, on every other query for 10 consecutive background checks,
// the certificate comes due and maintenance renews it: the domain stays
// verified, every handshake succeeds, and the new serial is served.
func TestRenewalDuringFlappingDNS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts pebble and challtestsrv, waits for a renewal")
	}
	s := startShortLivedDomain(t, "www.renew-flap.test", 40*time.Second)
	first := s.first
	handshake := func(step string) string {
		t.Helper()
		serial, err := s.serial()
		if err != nil {
			t.Fatalf("%s: handshake: %v", step, err)
		}
		return serial
	}
	if got := handshake("before the flapping"); got != first.Serial {
		t.Fatalf("serves %s, want the first certificate %s", got, first.Serial)
	}

	faulted := s.resolver.Faulted()
	renewedAt := 0
	for i := 1; i <= 10; i++ {
		switch i {
		case 1:
			s.resolver.SetFault(domaintest.ServFail, 2)
		case 6:
			s.resolver.SetFault(domaintest.Drop, 2)
		}
		step := "check " + strconv.Itoa(i)
		d := s.check(t, step)
		if d.State != store.DomainVerified || d.PointsElsewhereChecks != 0 || !s.m.CertificateAllowed(s.name) {
			t.Fatalf("%s while the DNS flaps: %+v", step, d)
		}
		if serial := handshake(step); serial != first.Serial && renewedAt == 0 {
			renewedAt = i
		}
		if i == 5 && renewedAt == 0 {
			// Halfway: the certificate comes due now, in real time; every
			// handshake while maintenance renews it must succeed.
			deadline := *first.NotAfter
			for handshake(step+", waiting for the renewal") == first.Serial {
				if time.Now().After(deadline) {
					t.Fatalf("not renewed before the first certificate expired at %v", first.NotAfter)
				}
				time.Sleep(50 * time.Millisecond)
			}
			renewedAt = i
		}
	}
	if renewedAt == 0 || renewedAt == 10 {
		t.Fatalf("renewed after check %d; want within the 10 checks", renewedAt)
	}
	if s.resolver.Faulted() == faulted {
		t.Error("no query failed: the checks did not see the flapping")
	}
	d, err := s.m.Get(context.Background(), s.name)
	if err != nil {
		t.Fatal(err)
	}
	c := d.Certificate
	if c.State != store.CertIssued || c.Serial == first.Serial || c.Serial != handshake("after the renewal") {
		t.Errorf("after the renewal: stored %+v", c)
	}
	if last := c.Events[len(c.Events)-1]; last.Kind != store.CertEventRenewed || !strings.Contains(last.Detail, c.Serial) {
		t.Errorf("events after the renewal: %+v", c.Events)
	}
	t.Logf("renewed between check %d and check %d of the flapping", renewedAt, renewedAt+1)
}

// TestMovedDomainIsNotRenewed: a moved domain keeps its certificate but
// is no longer managed: maintenance lets it pass its renewal time and
// expire without an order reaching the CA, handshakes then fail, and once
// the DNS points here again the domain is verified and gets a new
// certificate by itself.
func TestMovedDomainIsNotRenewed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts pebble and challtestsrv, waits for a certificate to expire")
	}
	s := startShortLivedDomain(t, "shop.moved-expiry.test", 20*time.Second)
	first := s.first
	ctx := context.Background()

	// Three checks pointing elsewhere over an hour: the first an hour ago
	// by the manager's clock, the others now.
	s.resolver.SetCNAME(t, s.name, "elsewhere.example.net")
	s.clk.set(-61 * time.Minute)
	if d, err := s.m.Verify(ctx, s.name); err != nil || d.PointsElsewhereChecks != 1 {
		t.Fatalf("first check pointing elsewhere: %+v %v", d, err)
	}
	s.clk.set(0)
	s.check(t, "second check pointing elsewhere")
	d := s.check(t, "third check pointing elsewhere")
	if d.State != store.DomainMoved {
		t.Fatalf("after 3 checks over an hour pointing elsewhere: %+v", d)
	}
	if serial, err := s.serial(); err != nil || serial != first.Serial {
		t.Fatalf("moved: handshake %v, serial %s; want the first certificate %s", err, serial, first.Serial)
	}
	orders := s.orders()

	// Maintenance looks every second while the certificate passes its
	// renewal time and expires: it is served unchanged until then.
	var lastErr error
	for deadline := first.NotAfter.Add(10 * time.Second); ; {
		serial, err := s.serial()
		var invalid x509.CertificateInvalidError
		if errors.As(err, &invalid) && invalid.Reason == x509.Expired {
			lastErr = err
			break
		}
		if err != nil {
			t.Fatalf("moved, before its certificate expired: handshake: %v", err)
		}
		if serial != first.Serial {
			t.Fatalf("a moved domain's certificate was renewed: serves %s, was %s", serial, first.Serial)
		}
		if time.Now().After(deadline) {
			t.Fatalf("still served at %v, after its notAfter %v", time.Now(), first.NotAfter)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if time.Now().Before(*first.RenewalDueAt) {
		t.Fatalf("handshakes failed (%v) before the renewal was due at %v", lastErr, first.RenewalDueAt)
	}
	t.Logf("after expiry: %v", lastErr)
	if n := s.orders(); n != orders {
		t.Errorf("%d orders reached pebble after the move", n-orders)
	}
	if d, _ := s.m.Get(ctx, s.name); d.Certificate.Serial != first.Serial || d.Certificate.State != store.CertExpired {
		t.Errorf("after expiry the domain shows %+v", d.Certificate)
	}
	// The next check unloads it: no certificate at all, whatever the
	// client accepts.
	s.check(t, "a check after expiry")
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.pebble.TLSPort)),
		&tls.Config{ServerName: s.name, InsecureSkipVerify: true})
	if err == nil {
		conn.Close()
		t.Error("the expired certificate of a moved domain is still offered")
	}

	// The DNS back: verified, and a new certificate without a visitor.
	s.resolver.SetCNAME(t, s.name, "cname.petstore.test")
	if d := s.check(t, "DNS back"); d.State != store.DomainVerified {
		t.Fatalf("DNS back: %+v", d)
	}
	again := waitCert(t, s.db, s.name, "a new certificate", 30*time.Second, func(c store.Certificate) bool {
		return c.State == store.CertIssued && c.Serial != first.Serial
	})
	// Maintenance renews the expired certificate it was handed back, and
	// certmagic reports a renewal, which records it, before it puts the
	// new certificate in the cache.
	domaintest.WaitFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if serial, err := s.serial(); err != nil || serial != again.Serial {
			return fmt.Errorf("verified again: handshake %v, serial %s; want %s", err, serial, again.Serial)
		}
		return nil
	})
}
