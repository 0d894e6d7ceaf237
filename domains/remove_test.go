package domains_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"petstore/domains"
	"petstore/domains/domaintest"
	"petstore/store/boltstore"
)

// certGate holds the first read of a stored certificate's metadata, the
// last read before the certificate goes into the cache, until the test
// releases it: what a removal meets when it lands as an issuance ends.
type certGate struct {
	*boltstore.DB
	reached, release chan struct{}
}

func (g *certGate) KVGet(ctx context.Context, key string) ([]byte, error) {
	v, err := g.DB.KVGet(ctx, key)
	if err == nil && strings.HasPrefix(key, "certificates/") && strings.HasSuffix(key, ".json") {
		select {
		case <-g.reached:
		default:
			close(g.reached)
			<-g.release
		}
	}
	return v, err
}

// TestRemoveWhileTheCertificateIsCached: a domain removed after its
// certificate was issued and stored, as it is read into the cache, gets no
// handshake afterwards and leaves no certificate in storage.
func TestRemoveWhileTheCertificateIsCached(t *testing.T) {
	dns, pebble := startCA(t, 0)
	gate := &certGate{reached: make(chan struct{}), release: make(chan struct{})}
	m, db := acmeManager(t, dns, pebble, nil, domains.ACME{}, func(c *domains.Config) {
		gate.DB = c.Store.(*boltstore.DB)
		c.Store = gate
	})
	ctx := context.Background()
	const name = "gone.example.org"
	addVerified(t, m, dns, name)
	select {
	case <-gate.reached:
	case <-time.After(30 * time.Second):
		t.Fatal("no certificate was stored")
	}
	if err := m.Remove(ctx, name); err != nil {
		t.Fatal(err)
	}
	close(gate.release)
	// The attempt has ended when its lock is free.
	domaintest.WaitFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		got, err := db.TryLock(ctx, "certattempt/"+name)
		if err != nil || !got {
			return errors.New("the attempt still runs")
		}
		return db.Unlock(ctx, "certattempt/"+name)
	})
	client, server := net.Pipe()
	go func() {
		defer server.Close()
		_ = tls.Server(server, m.TLSConfig()).Handshake()
	}()
	err := tls.Client(client, &tls.Config{ServerName: name, InsecureSkipVerify: true}).Handshake()
	client.Close()
	if err == nil {
		t.Error("a handshake for the removed domain succeeded")
	}
	keys, err := db.KVKeys(ctx, "certificates")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.Contains(k, name) {
			t.Errorf("the removed domain's %s is still in storage", k)
		}
	}
}
