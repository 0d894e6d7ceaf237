package main

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/domains"
	"petstore/domains/dnscheck"
	"petstore/domains/domaintest"
	"petstore/store"
	"petstore/store/boltstore"
)

// TestSeedTLSStore_ServedWithoutCA checks the seeding against the service's
// own domain manager, in process: the certificates are where certmagic looks
// for them, so handshakes for every name succeed with the seeded certificate
// (loaded from storage on the first handshake, then from the cache), nothing
// is logged, and the data file is left as it was seeded: nothing asked the
// CA, which does not exist.
func TestSeedTLSStore_ServedWithoutCA(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tls.db")
	ca, err := newTestCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	names := tlsDomainNames(3)
	if err := seedTLSStore(ctx, path, "", ca, tlsACMECA, names); err != nil {
		t.Fatal(err)
	}
	if err := checkTLSStore(ctx, path, tlsACMECA, names); err != nil {
		t.Fatalf("right after seeding: %v", err)
	}

	db, err := boltstore.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var logs domaintest.SyncBuffer
	m, err := domains.NewManager(domains.Config{
		Store:    db,
		Platform: dnscheck.Platform{Domain: tlsPlatformDomain, CNAMETarget: "cname." + tlsPlatformDomain},
		Checker:  &dnscheck.Checker{},
		ACME:     &domains.ACME{CA: tlsACMECA, TLSPort: 443, HTTPPort: 80, DisableHTTPChallenge: true},
		Logger:   slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tln := tls.NewListener(ln, m.TLSConfig())
	var (
		served    sync.WaitGroup
		mu        sync.Mutex
		serverErr []string
	)
	served.Add(1)
	go func() {
		defer served.Done()
		for {
			c, err := tln.Accept()
			if err != nil {
				return
			}
			served.Add(1)
			go func() {
				defer served.Done()
				if err := c.(*tls.Conn).Handshake(); err != nil {
					mu.Lock()
					serverErr = append(serverErr, err.Error())
					mu.Unlock()
				}
				c.Close()
			}()
		}
	}()

	target := &tlsTarget{addr: ln.Addr().String(), names: names, roots: ca.pool}
	for round := range 2 { // from storage, then from the cache
		for i, name := range names {
			_, st, err := target.handshake(ctx, i)
			if err != nil {
				t.Fatalf("round %d, SNI %s: %v", round, name, err)
			}
			leaf := st.PeerCertificates[0]
			if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != name || leaf.Issuer.CommonName != ca.cert.Subject.CommonName {
				t.Fatalf("SNI %s: served a certificate for %v from %q", name, leaf.DNSNames, leaf.Issuer.CommonName)
			}
			if len(st.PeerCertificates) != 2 {
				t.Errorf("SNI %s: chain of %d certificates, want leaf and CA", name, len(st.PeerCertificates))
			}
			if st.DidResume {
				t.Errorf("SNI %s: resumed", name)
			}
		}
	}
	// A name that is not a verified domain gets no certificate, and asks nothing.
	unknown := &tlsTarget{addr: target.addr, names: []string{"stranger.example.com"}, roots: ca.pool}
	if _, _, err := unknown.handshake(ctx, 0); err == nil {
		t.Error("handshake for a name that is not attached succeeded")
	}

	ln.Close()
	served.Wait()
	if len(serverErr) != 1 || !strings.Contains(serverErr[0], "stranger.example.com") {
		t.Errorf("server handshake errors %q, want only the stranger's", serverErr)
	}
	m.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := checkTLSStore(ctx, path, tlsACMECA, names); err != nil {
		t.Errorf("after the handshakes: %v", err)
	}
	if l := logs.String(); l != "" {
		t.Errorf("the manager logged:\n%s", l)
	}
}

// The issuer key is certmagic's: host and path of the directory URL, made
// safe for a storage key by StorageKeys.
func TestACMEIssuerKey(t *testing.T) {
	if got := acmeIssuerKey(tlsACMECA); got != "127.0.0.1:1-directory" {
		t.Fatalf("issuer key %q", got)
	}
}

func TestLogWatch(t *testing.T) {
	var w logWatch
	w.Write([]byte("time=x level=INFO msg=\"request\"\ntime=x level=WARN msg=\"http: TLS handshake error from 127.0.0.1:1: EOF\"\ntime=x level=ERR"))
	w.Write([]byte("OR msg=\"a warning of the library\" component=certmagic\n"))
	lines, hs, cm, samples := w.summary()
	if lines != 2 || hs != 1 || cm != 1 || len(samples) != 2 || !strings.Contains(samples[1], "a warning of the library") {
		t.Fatalf("lines %d, handshake errors %d, certmagic %d, samples %q", lines, hs, cm, samples)
	}
}
